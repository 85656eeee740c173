//! `system.indexStatus` over a real socket, on real index builds: the build a search ranks
//! from and its staleness as states are applied under the daemon, unpublished builds and
//! whether a writer is running them, and the reasons a build stands aside — never describing a
//! build the caller may not read.

use crate::knowledge::ok;
use crate::ranked::{built, daemon_for, project_with, revise};
use serde_json::{json, Value};
use theurian_core::index::status::MAX_BUILDING;
use theurian_protocol::tools::ToolId;

const PROJECT: &str = "ranked";

async fn index_status(daemon: &crate::support::Daemon) -> Value {
    let c = daemon.typed().await;
    ok(
        &c.call("system.indexStatus", json!({"projectId": PROJECT}))
            .await,
        ToolId::SystemIndexStatus,
    )
}

#[tokio::test]
async fn the_active_build_its_staleness_and_unpublished_builds_are_reported() {
    let repo = project_with(&[
        ("a.first", "public", "The ledger posts every entry twice.\n"),
        (
            "b.second",
            "public",
            "Refunds reverse the original posting.\n",
        ),
    ]);
    let (build, _) = built(&repo);
    let daemon = daemon_for(&repo).await;

    let fresh = index_status(&daemon).await;
    let active = &fresh["active"];
    assert_eq!(active["indexBuildId"], build["indexBuildId"], "{fresh}");
    assert_eq!(active["stale"], false, "{fresh}");
    assert_eq!(active["builtFrom"], fresh["stateHash"], "{fresh}");
    assert_eq!(
        (active["items"].as_u64(), active["raptor"].as_bool()),
        (Some(2), Some(false))
    );
    assert!(active["passages"].as_u64() >= Some(2), "{fresh}");
    assert_eq!(
        (&fresh["fallbackReason"], &fresh["remedy"]),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(fresh["building"], json!([]));

    // A state applied under the running daemon: the same build, now stale, with the cure.
    revise(
        &repo,
        &[(0, "a.first", "The ledger posts each entry on two sides.\n")],
    );
    let stale = index_status(&daemon).await;
    assert_ne!(stale["stateHash"], fresh["stateHash"]);
    // (The apply may re-derive the build without the replaced passages; it is still the build
    // made from the earlier state.)
    assert_eq!(stale["active"]["builtFrom"], fresh["stateHash"], "{stale}");
    assert_eq!(stale["active"]["stale"], true, "{stale}");
    assert!(stale["remedy"]
        .as_str()
        .is_some_and(|r| r.contains("theurian index build")));

    // A build directory nobody is writing is left over; under the write lock it is running.
    let state = repo.dir.path().join(".theurian/state");
    let id = ulid::Ulid::from_parts(1_764_979_200_123, 9).to_string();
    std::fs::create_dir(state.join(format!("theurian-index-{id}.building"))).expect("dir");
    let listed = index_status(&daemon).await;
    assert_eq!(
        listed["building"],
        json!([{"indexBuildId": id, "startedAt": "2025-12-06T00:00:00.123Z", "running": false}])
    );
    let lock = theurian_core::store::lock::acquire(
        &repo.dir.path().join(".theurian/runtime"),
        std::time::Duration::from_secs(5),
    )
    .expect("lock");
    assert_eq!(index_status(&daemon).await["building"][0]["running"], true);
    drop(lock);

    // A rebuild publishes a fresh build; the pin answers against the older state.
    let (rebuilt, _) = built(&repo);
    let now = index_status(&daemon).await;
    assert_eq!(now["active"]["indexBuildId"], rebuilt["indexBuildId"]);
    assert_eq!(now["active"]["stale"], false, "{now}");
    let c = daemon.typed().await;
    let pinned = ok(
        &c.call(
            "system.indexStatus",
            json!({"projectId": PROJECT, "snapshotId": fresh["stateHash"]}),
        )
        .await,
        ToolId::SystemIndexStatus,
    );
    assert_eq!(pinned["stateHash"], fresh["stateHash"]);
    assert_eq!(pinned["active"]["stale"], true, "{pinned}");
    daemon.shutdown().await;
}

#[tokio::test]
async fn a_build_that_stands_aside_is_named_by_its_reason_only() {
    let repo = project_with(&[
        ("a.open", "public", "Open text.\n"),
        (
            "b.closed",
            "confidential",
            "Closed text the default ceiling withholds.\n",
        ),
    ]);
    let daemon = daemon_for(&repo).await;
    let none = index_status(&daemon).await;
    assert_eq!(
        (&none["active"], &none["fallbackReason"]),
        (&Value::Null, &json!("no-index"))
    );
    assert!(none["remedy"]
        .as_str()
        .is_some_and(|r| r.contains("theurian index build")));

    // A build made under another ceiling (here: its pointer claims one) is not described at
    // all: no id, no counts that could tell what it holds above this daemon's ceiling.
    built(&repo);
    let pointer = repo.dir.path().join(".theurian/state/active-index.json");
    let mut recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(&pointer).expect("pointer")).expect("json");
    recorded["indexedSensitivities"] = json!(["public", "internal", "confidential"]);
    std::fs::write(&pointer, recorded.to_string()).expect("write");
    let aside = index_status(&daemon).await;
    assert_eq!(aside["active"], Value::Null, "{aside}");
    assert_eq!(aside["fallbackReason"], "serving-profile-mismatch");
    let text = aside.to_string();
    assert!(
        !text.contains(recorded["indexBuildId"].as_str().expect("id")),
        "{text}"
    );

    // A project this daemon does not know is refused by code, as every project tool refuses it.
    let c = daemon.typed().await;
    let unknown = c
        .call("system.indexStatus", json!({"projectId": "nobody-here"}))
        .await;
    crate::knowledge::refused(&unknown, "PROJECT_NOT_REGISTERED");
    daemon.shutdown().await;
}

#[test]
fn the_reported_bound_on_unpublished_builds_is_the_schema_s() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::support::root().join("schemas/mcp/system-index-status-response.schema.json"),
        )
        .expect("schema"),
    )
    .expect("json");
    assert_eq!(
        schema["properties"]["building"]["maxItems"].as_u64(),
        Some(MAX_BUILDING as u64)
    );
}
