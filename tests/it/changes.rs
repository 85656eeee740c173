//! `knowledge.listChanges` over a real socket between states built by real migrations in a real
//! git repository: each kind of change against the operations that made it, paging, the
//! ceiling (an item that was above it reads as added, never as restored or relabelled), and the
//! refusals for a state not held and a cursor not issued.

use crate::knowledge::{ok, refused};
use crate::migrate_apply::{git, Repo};
use crate::ranked::{daemon_for, project_with};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use theurian_protocol::tools::ToolId;

fn commit_migration(repo: &Repo, id: &str, after: &str, ops: &str) {
    std::fs::write(
        repo.dir.path().join(format!(".theurian/migrations/{id}.yaml")),
        format!("apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-17T00:00:00Z\nauthor: t\ndependsOn: [{after}]\noperations:\n{ops}"),
    )
    .expect("migration");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", id]);
    repo.ok(&["--json", "migrate", "apply"]);
}

fn state_hash(repo: &Repo) -> String {
    repo.ok(&["--json", "migrate", "status"])["stateHash"]
        .as_str()
        .expect("hash")
        .to_owned()
}

fn summary(body: &Value) -> Vec<String> {
    body["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["itemId"].as_str().unwrap_or(""),
                c["change"].as_str().unwrap_or(""),
                c["relabelled"]
            )
        })
        .collect()
}

const M2: &str = "01K1BBBBBB0000000000000060";
const M3: &str = "01K1BBBBBB0000000000000061";

#[tokio::test]
async fn changes_between_states_follow_the_operations_that_made_them() {
    let repo = project_with(&[
        ("k.a", "public", "A one.\n"),
        ("k.b", "public", "B.\n"),
        ("k.c", "public", "C.\n"),
        ("k.d", "confidential", "D, above the default ceiling.\n"),
        ("k.e", "public", "E.\n"),
    ]);
    let first = state_hash(&repo);
    let body = "A two.\n";
    std::fs::write(repo.dir.path().join(".theurian/knowledge/k.a.v2.md"), body).expect("body");
    std::fs::write(repo.dir.path().join(".theurian/knowledge/k.f.md"), "F.\n").expect("body");
    let sha = |b: &str| format!("{:x}", Sha256::digest(b.as_bytes()));
    let meta = "{title: t, contentType: text/markdown, kind: architecture, namespace: t, status: approved, owner: o, sensitivity: public, labels: [authored-in-theurian]}";
    let after: Vec<String> = (1..=5)
        .map(|n| format!("01K1BBBBBB00000000000000{n:02}"))
        .collect();
    commit_migration(
        &repo,
        M2,
        &after.join(", "),
        &format!(
            "  - {{op: upsertRevision, itemId: k.a, revisionId: 01K1CCCCCC0000000000000091, expectedRevision: 01K1CCCCCC0000000000000001, contentFile: ../knowledge/k.a.v2.md, contentSha256: {}, metadata: {meta}}}\n  - {{op: deprecateItem, itemId: k.b}}\n  - {{op: changeSensitivity, itemId: k.c, sensitivity: internal, reason: r}}\n  - {{op: changeSensitivity, itemId: k.d, sensitivity: public, reason: r}}\n  - {{op: changeOwner, itemId: k.e, owner: someone-else}}\n  - {{op: upsertRevision, itemId: k.f, revisionId: 01K1CCCCCC0000000000000096, contentFile: ../knowledge/k.f.md, contentSha256: {}, metadata: {meta}}}\n",
            sha(body),
            sha("F.\n")
        ),
    );
    let second = state_hash(&repo);
    commit_migration(&repo, M3, M2, "  - {op: restoreItem, itemId: k.b}\n");
    let third = state_hash(&repo);

    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let list = |args: Value| {
        let c = &c;
        async move {
            let mut full = json!({"projectId": "ranked"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            c.call("knowledge.listChanges", full).await
        }
    };

    let one = ok(
        &list(json!({"since": first, "snapshotId": second})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!(
        summary(&one),
        [
            "k.a revised []",
            "k.b withdrawn []",
            "k.c relabelled [\"sensitivity\"]",
            "k.d added []",
            "k.e relabelled [\"owner\"]",
            "k.f added []",
        ],
        "{one}"
    );
    let a = &one["changes"][0];
    assert_eq!(
        (&a["fromRevisionId"], &a["toRevisionId"], &a["migrationIds"]),
        (
            &json!("01K1CCCCCC0000000000000001"),
            &json!("01K1CCCCCC0000000000000091"),
            &json!([M2])
        )
    );
    // What d was before (its label, its revision) is not disclosed.
    assert_eq!(one["changes"][3]["fromRevisionId"], Value::Null);
    assert_eq!(
        (&one["since"], &one["stateHash"], &one["nextCursor"]),
        (&json!(first), &json!(second), &Value::Null)
    );

    // Withdrawn then restored: between the first and the current state, b did not change.
    let two = ok(
        &list(json!({"since": second})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!(summary(&two), ["k.b restored []"]);
    assert_eq!(two["changes"][0]["migrationIds"], json!([M3]));
    assert_eq!(two["stateHash"], third);
    let both = ok(
        &list(json!({"since": first})).await,
        ToolId::KnowledgeListChanges,
    );
    assert!(
        !summary(&both).iter().any(|s| s.starts_with("k.b")),
        "{both}"
    );
    let none = ok(
        &list(json!({"since": third})).await,
        ToolId::KnowledgeListChanges,
    );
    assert_eq!((&none["count"], &none["changes"]), (&json!(0), &json!([])));

    // Pages of two add up to the whole list.
    let mut paged = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = ok(
            &list(json!({"since": first, "snapshotId": second, "limit": 2, "cursor": cursor}))
                .await,
            ToolId::KnowledgeListChanges,
        );
        paged.extend(summary(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(paged, summary(&one));

    let unknown = refused(
        &list(json!({"since": "0".repeat(64)})).await,
        "SNAPSHOT_NOT_FOUND",
    );
    assert!(unknown.starts_with("At since:"), "{unknown}");
    let forged = refused(
        &list(json!({"since": first, "cursor": "../../x"})).await,
        "INVALID_INPUT",
    );
    assert!(
        forged.starts_with("At cursor:") && !forged.contains("../../x"),
        "{forged}"
    );
    daemon.shutdown().await;
}

/// The replay check: random valid migrations applied one at a time, an in-test model of what
/// each item looks like after each (its revision, status, labels, whether it is retired), and
/// for every pair of states the changes the model's two pictures imply must be exactly what
/// `knowledge.listChanges` answers between the two state hashes.
mod replay {
    use super::*;
    use crate::migrate::sha256;
    use std::collections::{BTreeMap, BTreeSet};

    const LEVELS: [&str; 3] = ["public", "internal", "confidential"];
    /// The default ceiling's position in `LEVELS`.
    const CEILING: usize = 1;

    #[derive(Clone)]
    struct Item {
        revision: String,
        approved: bool,
        retired: bool,
        sensitivity: usize,
        owner: String,
    }

    impl Item {
        fn served(&self) -> bool {
            self.approved && !self.retired && self.sensitivity <= CEILING
        }
    }

    type Picture = BTreeMap<String, Item>;

    /// A small deterministic generator, so a failure names the seed that reproduces it.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    struct Replay {
        repo: Repo,
        rng: Rng,
        picture: Picture,
        revisions: usize,
        /// After each state: its hash and picture; after each migration, the items it touched.
        states: Vec<(String, Picture)>,
        migrations: Vec<(String, BTreeSet<String>)>,
    }

    impl Replay {
        fn start(seed: u64) -> Self {
            let ids: Vec<String> = (0..8).map(|n| format!("k.i{n}")).collect();
            let labels = ["public", "internal", "confidential", "public:draft"];
            let initial: Vec<(&str, &str, &str)> = ids
                .iter()
                .enumerate()
                .map(|(n, id)| (id.as_str(), labels[n % labels.len()], "First.\n"))
                .collect();
            let repo = project_with(&initial);
            let mut picture = Picture::new();
            for (n, (id, label, _)) in initial.iter().enumerate() {
                let (level, status) = label.split_once(':').unwrap_or((label, "approved"));
                let item = Item {
                    revision: format!("01K1CCCCCC00000000000000{:02}", n + 1),
                    approved: status == "approved",
                    retired: false,
                    sensitivity: LEVELS.iter().position(|l| l == &level).unwrap_or(0),
                    owner: "o".to_owned(),
                };
                picture.insert((*id).to_owned(), item);
            }
            let hash = state_hash(&repo);
            Replay {
                repo,
                rng: Rng(seed),
                states: vec![(hash, picture.clone())],
                picture,
                revisions: 0,
                migrations: Vec::new(),
            }
        }

        /// One valid operation on `id` (a new item when the picture lacks it), applied to the
        /// picture and returned as migration YAML.
        fn operation(&mut self, id: &str) -> String {
            let Some(item) = self.picture.get(id).cloned() else {
                let sensitivity = self.rng.below(LEVELS.len());
                let approved = self.rng.below(3) > 0;
                return self.revise(id, None, approved, sensitivity, "o".to_owned());
            };
            if item.retired {
                self.set(id, |i| i.retired = false);
                return format!("  - {{op: restoreItem, itemId: {id}}}\n");
            }
            match self.rng.below(4) {
                0 => {
                    let approved = self.rng.below(3) > 0;
                    let previous = item.revision.clone();
                    self.revise(id, Some(previous), approved, item.sensitivity, item.owner)
                }
                1 if item.approved => {
                    self.set(id, |i| i.retired = true);
                    format!("  - {{op: deprecateItem, itemId: {id}}}\n")
                }
                2 => {
                    let level = (item.sensitivity + 1 + self.rng.below(2)) % LEVELS.len();
                    self.set(id, |i| i.sensitivity = level);
                    format!(
                        "  - {{op: changeSensitivity, itemId: {id}, sensitivity: {}, reason: r}}\n",
                        LEVELS[level]
                    )
                }
                _ => {
                    let owner = format!("owner{}", self.rng.below(1000));
                    let yaml = format!("  - {{op: changeOwner, itemId: {id}, owner: {owner}}}\n");
                    self.set(id, |i| i.owner = owner);
                    yaml
                }
            }
        }

        fn set(&mut self, id: &str, change: impl FnOnce(&mut Item)) {
            if let Some(item) = self.picture.get_mut(id) {
                change(item);
            }
        }

        fn revise(
            &mut self,
            id: &str,
            expected: Option<String>,
            approved: bool,
            sensitivity: usize,
            owner: String,
        ) -> String {
            self.revisions += 1;
            let revision = format!("01K1DDDDDD{:016}", self.revisions);
            let body = format!("{id}, revision {}.\n", self.revisions);
            let file = format!("{id}.r{}.md", self.revisions);
            let knowledge = self.repo.dir.path().join(".theurian/knowledge");
            std::fs::write(knowledge.join(&file), &body).expect("body");
            let status = if approved { "approved" } else { "draft" };
            let expected = expected
                .map(|r| format!("expectedRevision: {r}, "))
                .unwrap_or_default();
            let yaml = format!(
                "  - {{op: upsertRevision, itemId: {id}, revisionId: {revision}, {expected}contentFile: ../knowledge/{file}, contentSha256: {}, metadata: {{title: {id}, contentType: text/markdown, kind: architecture, namespace: t, status: {status}, owner: {owner}, sensitivity: {}, labels: [authored-in-theurian]}}}}\n",
                sha256(body.as_bytes()),
                LEVELS[sensitivity]
            );
            let item = Item {
                revision,
                approved,
                retired: false,
                sensitivity,
                owner,
            };
            self.picture.insert(id.to_owned(), item);
            yaml
        }

        /// One committed and applied migration of one to four operations on distinct items.
        fn step(&mut self) {
            let n = self.migrations.len() + 1;
            let id = format!("01K1EEEEEE{n:016}");
            let after = match self.migrations.last() {
                Some((previous, _)) => previous.clone(),
                None => (1..=8)
                    .map(|k| format!("01K1BBBBBB00000000000000{k:02}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let mut candidates: Vec<String> = self.picture.keys().cloned().collect();
            candidates.push(format!("k.n{n}"));
            let mut touched = BTreeSet::new();
            for _ in 0..1 + self.rng.below(4) {
                touched.insert(candidates[self.rng.below(candidates.len())].clone());
            }
            let ops: String = touched.iter().map(|item| self.operation(item)).collect();
            commit_migration(&self.repo, &id, &after, &ops);
            self.migrations.push((id, touched));
            let hash = state_hash(&self.repo);
            self.states.push((hash, self.picture.clone()));
        }

        /// What the model says listChanges answers from state `i` to state `j`.
        fn expected(&self, i: usize, j: usize) -> Vec<String> {
            let (old, new) = (&self.states[i].1, &self.states[j].1);
            let ids: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
            let mut out = Vec::new();
            for id in ids {
                let (o, n) = (old.get(id), new.get(id));
                let change = match (served(o), served(n)) {
                    (Some(o), Some(n)) => {
                        let labels = relabelled(o, n);
                        if o.revision != n.revision {
                            ("revised", labels)
                        } else if !labels.is_empty() {
                            ("relabelled", labels)
                        } else {
                            continue;
                        }
                    }
                    (None, Some(_)) => {
                        let retired = o.is_some_and(|o| o.retired && o.sensitivity <= CEILING);
                        (if retired { "restored" } else { "added" }, vec![])
                    }
                    (Some(_), None) => ("withdrawn", vec![]),
                    (None, None) => continue,
                };
                let migrations: Vec<&String> = self.migrations[i..j]
                    .iter()
                    .filter(|(_, touched)| touched.contains(id))
                    .map(|(m, _)| m)
                    .collect();
                let revision = |x: Option<&Item>| served(x).map(|x| x.revision.clone());
                out.push(format!(
                    "{id} {} {:?} {:?} {:?} {migrations:?}",
                    change.0,
                    change.1,
                    revision(o),
                    revision(n)
                ));
            }
            out
        }
    }

    fn served(x: Option<&Item>) -> Option<&Item> {
        x.filter(|x| x.served())
    }

    fn relabelled(o: &Item, n: &Item) -> Vec<&'static str> {
        let mut labels = Vec::new();
        if o.sensitivity != n.sensitivity {
            labels.push("sensitivity");
        }
        if o.owner != n.owner {
            labels.push("owner");
        }
        labels
    }

    fn answered(body: &Value) -> Vec<String> {
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| a.iter().filter_map(text).collect())
                .unwrap_or_default()
        };
        body["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .map(|c| {
                let migrations = strings(&c["migrationIds"]);
                let migrations: Vec<&String> = migrations.iter().collect();
                format!(
                    "{} {} {:?} {:?} {:?} {migrations:?}",
                    c["itemId"].as_str().unwrap_or(""),
                    c["change"].as_str().unwrap_or(""),
                    strings(&c["relabelled"]),
                    text(&c["fromRevisionId"]),
                    text(&c["toRevisionId"]),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn every_pair_of_states_agrees_with_a_replay_of_the_migrations_between() {
        for seed in [0x9e37_79b9_7f4a_7c15_u64, 0x2545_f491_4f6c_dd1d] {
            let mut replay = Replay::start(seed);
            for _ in 0..6 {
                replay.step();
            }
            let daemon = daemon_for(&replay.repo).await;
            let c = daemon.typed().await;
            let last = replay.states.len();
            let mut compared = 0;
            for i in 0..last {
                for j in i..last {
                    let args = json!({
                        "projectId": "ranked",
                        "since": replay.states[i].0,
                        "snapshotId": replay.states[j].0,
                        "limit": 200,
                    });
                    let body = ok(
                        &c.call("knowledge.listChanges", args).await,
                        ToolId::KnowledgeListChanges,
                    );
                    assert_eq!(
                        answered(&body),
                        replay.expected(i, j),
                        "seed {seed:#x}, states {i} → {j}"
                    );
                    compared += usize::from(body["count"] != json!(0));
                }
            }
            // The generator must have produced real differences to compare.
            assert!(compared >= 10, "seed {seed:#x}: only {compared} non-empty");
            daemon.shutdown().await;
        }
    }
}
