//! OKF bundles of the reference's own dogfood corpus (read from ../shared at test time).

use crate::support::shared;
use std::path::Path;

/// OKF round trip on the reference's own dogfood corpus: export, import into an empty project,
/// accept and merge every proposal, apply, export again: the same concepts, titled the same.
#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn an_okf_bundle_of_the_dogfood_corpus_survives_a_round_trip() {
    use crate::migrate_apply::{git, Repo};
    let source = Repo::of(&shared().join("corpus/theurian-dogfood"));
    source.ok(&["--json", "project", "register", "--project-id", "dogfood"]);
    source.ok(&["--json", "migrate", "apply"]);
    let out = tempfile::tempdir().expect("out");
    let first = out.path().join("first");
    let exported = source.ok(&["--json", "okf", "export", first.to_str().expect("utf-8")]);
    assert_eq!(exported["concepts"], 26, "{exported}");

    let dir = tempfile::tempdir().expect("target");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    let target = Repo {
        dir,
        data: tempfile::tempdir().expect("data"),
    };
    target.ok(&["--json", "init"]);
    git(target.dir.path(), &["add", "-A"]);
    git(target.dir.path(), &["commit", "-q", "-m", "init"]);
    let imported = target.ok(&[
        "--json",
        "okf",
        "import",
        first.to_str().expect("utf-8"),
        "--owner",
        "o",
        "--author",
        "a@example.com",
        "--agent-id",
        "ag",
        "--task-id",
        "t",
        "--model",
        "m",
        "--reasoning",
        "r",
    ]);
    assert_eq!(imported["conceptsAdmitted"], 26, "{imported}");
    for id in imported["proposalIds"].as_array().into_iter().flatten() {
        target.ok(&["--json", "propose", "accept", id.as_str().expect("id")]);
    }
    git(target.dir.path(), &["add", "-A"]);
    git(
        target.dir.path(),
        &["commit", "-q", "-m", "merge the imported proposals"],
    );
    target.ok(&["--json", "project", "register", "--project-id", "again"]);
    target.ok(&["--json", "migrate", "apply"]);
    let second = out.path().join("second");
    let again = target.ok(&["--json", "okf", "export", second.to_str().expect("utf-8")]);
    assert_eq!(again["concepts"], 26, "{again}");
    let titles = |dir: &Path| -> Vec<String> {
        let index = std::fs::read_to_string(dir.join("index.md")).unwrap_or_default();
        let mut all: Vec<String> = index.lines().map(str::to_owned).collect();
        for entry in std::fs::read_dir(dir).expect("read").flatten() {
            if entry.path().is_dir() {
                let sub =
                    std::fs::read_to_string(entry.path().join("index.md")).unwrap_or_default();
                all.extend(sub.lines().map(str::to_owned));
            }
        }
        all.sort();
        all
    };
    assert_eq!(
        titles(&first),
        titles(&second),
        "the same concepts under the same titles and paths"
    );
}
