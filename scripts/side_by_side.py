#!/usr/bin/env python3
"""Side-by-side performance of this build and the reference (theurian 0.5.3) on one project.

usage: scripts/side_by_side.py PROJECT_DIR [--ours target/dist/theurian] [--n 400] [--ours-only]

PROJECT_DIR must be a git repository holding .theurian/ with committed migrations. The script
serves it with the reference (../shared/peer/run-reference.sh, port 17419) and with ours (a
scratch data directory, port 17420), runs ../shared/peer/bench_mcp.py against both for every
read tool at 1 and 8 clients, reads each daemon's resident memory from /proc, prints a table
of p50 latency, throughput and the ratios, and stops both daemons. Needs root (the reference
runs in a chroot) and a `--profile dist` build of ours. Not part of CI: the numbers are for the notes.

--ours-only skips the reference (no root needed) and prints our side alone, with the resident
memory split into anonymous memory and file-backed pages (mostly the binary's own code).

Last, each daemon is started cold five times in the foreground and timed from the spawn to its
first knowledge.search answer (median printed).

usage: scripts/side_by_side.py --docs DIR [--copies N] [--known 200] [--ours target/release/theurian]

--docs serves real documents instead of a project: `theurian bench search --docs DIR --keep`
turns every .md/.txt/.rst under DIR into one item (one migration), measures our in-process
search and writes the known-item queries (ten consecutive words of a body line, and four); the
migrations are committed into a scratch git project, and both implementations are timed from
cold on it (`migrate apply`, then `index build`, CLI wall clock, each from its own empty data
directory), then served and asked the same queries: knowledge.search p50 and throughput at 1
and 8 clients for both query sets (after one untimed pass over the queries on each daemon),
known-item recall@1 / recall@10 / MRR from each daemon's own answers, and resident memory after
the run.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "..", "shared", "peer")
PEER_ROOT = os.environ.get("PEER_ROOT", os.path.expanduser("~/.cache/theurian-peer"))


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


def rss_mib(pid, key="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def bench(url, token, tool, args_file, n, conc):
    out = sh([sys.executable, os.path.join(PEER, "bench_mcp.py"), url, token, tool, args_file, "--n", str(n), "--conc", str(conc)])
    return json.loads(out.strip().splitlines()[-1])


def first_answer(url, token_file, project, deadline):
    """Polls until one knowledge.search call answers with structured content; False on timeout.
    Each attempt is a fresh initialize + tools/call, so a daemon still binding is simply retried."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    while time.perf_counter() < deadline:
        try:
            with open(token_file) as f:
                headers["Authorization"] = "Bearer " + f.read().strip()
            headers.pop("Mcp-Session-Id", None)
            for body in ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                             "protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "cold-start", "version": "0"}}},
                         {"jsonrpc": "2.0", "method": "notifications/initialized"},
                         {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                             "name": "knowledge.search", "arguments": {"projectId": project, "query": "state hash"}}}):
                req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=30) as resp:
                    text = resp.read().decode("utf-8", "replace")
                    # A session-keeping server (the reference) names the session on initialize
                    # and refuses later calls that do not carry it back.
                    sid = resp.headers.get("mcp-session-id")
                    if sid:
                        headers["Mcp-Session-Id"] = sid
            if '"structuredContent"' in text:
                return True
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.002)
    return False


def cold_start_ms(cmd, url, token_file, project, env=None, runs=5):
    """Median milliseconds from spawning a daemon in the foreground to its first search answer
    (process start, token, binding, project resolution, opening the state and the index)."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        ok = first_answer(url, token_file, project, t0 + 30)
        samples.append((time.perf_counter() - t0) * 1e3 if ok else float("nan"))
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    return statistics.median(samples)


def serve_ours(ours, project, name, port):
    """Registers, applies, builds and serves a clone of `project` with our build from a scratch
    data directory; returns the data directory and the environment naming it.

    Both implementations keep derived state under the project's .theurian/state/ and name their
    active index alike: ours serves a clone, or its build would replace the pointer the
    reference reads and the reference would answer from its unranked fallback scan."""
    data = tempfile.mkdtemp(prefix="theurian-ours-")
    env = dict(os.environ, THEURIAN_DATA_DIR=data)
    clone = os.path.join(data, name)
    sh(["git", "clone", "-q", project, clone])
    for cmd in (["project", "register", "--project-id", name], ["migrate", "apply"], ["index", "build"]):
        sh([ours, "--json", *cmd], cwd=clone, env=env)
    sh([ours, "daemon", "start", "--port", str(port)], cwd=clone, env=env)
    return data, env


def timed(args, **kw):
    t0 = time.perf_counter()
    sh(args, **kw)
    return time.perf_counter() - t0


def docs_project(ours, docs, copies, work):
    """Our in-process figures for both query lengths, and a committed git project holding the
    documents as migrations; returns (project dir, {words: bench json}, {words: queries})."""
    keep = os.path.join(work, "bench")
    figures, queries = {}, {}
    for words in (10, 4):
        figures[words] = json.loads(sh([ours, "--json", "bench", "search", "--docs", docs, "--copies", str(copies),
                                        "--keep", keep, "--query-words", str(words)]))
        with open(os.path.join(keep, f"queries-{words}.json")) as f:
            queries[words] = json.load(f)
    project = os.path.join(work, "docs")
    for sub in ("migrations", "knowledge"):
        shutil.copytree(os.path.join(keep, "corpus", ".theurian", sub), os.path.join(project, ".theurian", sub))
    # Long real documents hold high-entropy strings (hashes, keys in examples) that both
    # implementations' secret scan blocks a build on by default; here they are reported only.
    with open(os.path.join(project, ".theurian", "config.yaml"), "w") as f:
        f.write("security:\n  secretScan: warn\n")
    sh(["git", "init", "-q", "-b", "main", project])
    sh(["git", "-C", project, "add", "-A"])
    sh(["git", "-C", project, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "documents"])
    return project, figures, queries


def cold_ours(ours, project, name, work):
    """Seconds for our `migrate apply` and `index build` on a fresh clone and data directory."""
    data = os.path.join(work, "ours-cold-data")
    clone = os.path.join(work, "ours-cold", name)
    sh(["git", "clone", "-q", project, clone])
    env = dict(os.environ, THEURIAN_DATA_DIR=data)
    sh([ours, "--json", "project", "register", "--project-id", name], cwd=clone, env=env)
    return (timed([ours, "--json", "migrate", "apply"], cwd=clone, env=env),
            timed([ours, "--json", "index", "build"], cwd=clone, env=env))


def cold_reference(project, name, work):
    """The same for the reference, in its root, with its own empty data directory."""
    clone = os.path.join(work, "ref-cold", name)
    sh(["git", "clone", "-q", project, clone])
    mount = os.path.join(PEER_ROOT, "projects-cold", name)
    os.makedirs(mount, exist_ok=True)
    shutil.rmtree(os.path.join(PEER_ROOT, "data-cold"), ignore_errors=True)
    sh(["mount", "--bind", clone, mount])
    try:
        def run(cmd):
            return timed(["chroot", PEER_ROOT, "env", "HOME=/root", "THEURIAN_DATA_DIR=/data-cold", "bash", "-c",
                          f"cd /projects-cold/{name} && git config --global --add safe.directory '*' && /opt/th/bin/theurian {cmd} >/dev/null"])
        run(f"project register --project-id {name}")
        return run("migrate apply"), run("index build")
    finally:
        sh(["umount", mount])


def known_item(url, token_file, name, queries):
    """recall@1, recall@10 and MRR of one daemon over (item, query) pairs, from its answers."""
    sys.path.insert(0, PEER)
    import bench_mcp
    with open(token_file) as f:
        call = bench_mcp.session(url, f.read().strip())
    hit1 = hit10 = 0
    reciprocal = 0.0
    for i, q in enumerate(queries):
        _, text = call({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
            "name": "knowledge.search", "arguments": {"projectId": name, "query": q["query"], "limit": 10}}})
        results = bench_mcp.parse(text).get("result", {}).get("structuredContent", {}).get("results") or []
        ids = [r.get("itemId") for r in results]
        if q["itemId"] in ids:
            rank = ids.index(q["itemId"])
            hit10 += 1
            hit1 += rank == 0
            reciprocal += 1 / (rank + 1)
    n = max(len(queries), 1)
    return hit1 / n, hit10 / n, reciprocal / n


def sample(items, at_most):
    step = max(1, -(-len(items) // at_most))
    return items[::step]


def docs_main(a):
    work = tempfile.mkdtemp(prefix="theurian-sbs-docs-")
    project, figures, queries = docs_project(a.ours, os.path.realpath(a.docs), a.copies, work)
    name = os.path.basename(project)
    ours_cold = cold_ours(a.ours, project, name, work)
    ref_cold = (float("nan"), float("nan")) if a.ours_only else cold_reference(project, name, work)
    if not a.ours_only:
        sh(["bash", os.path.join(PEER, "run-reference.sh"), project, "17419"])
    data, env = serve_ours(a.ours, project, name, 17420)
    ours_pid = json.loads(sh([a.ours, "--json", "daemon", "status"], env=env))["pid"]
    ref_pid = None
    ref_token = os.path.join(PEER_ROOT, "data-17419", "auth", "mcp-token")
    if not a.ours_only:
        with open(os.path.join(PEER_ROOT, "data-17419", "daemon.lock")) as f:
            ref_pid = int(re.search(r"\d+", f.read()).group(0))
    ours_url, ours_token = "http://127.0.0.1:17420/mcp", os.path.join(data, "auth", "mcp-token")
    ref_url = "http://127.0.0.1:17419/mcp"
    rows, relevance = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for words in (10, 4):
            asked = sample(queries[words], a.known)
            path = os.path.join(tmp, f"q{words}.json")
            with open(path, "w") as f:
                json.dump([{"projectId": name, "query": q["query"]} for q in asked], f)
            # One untimed pass over the queries for each daemon first: the figures are for a
            # daemon in service, not the first reads of each file (cold start is timed below).
            bench(ours_url, ours_token, "knowledge.search", path, len(asked), 1)
            if not a.ours_only:
                bench(ref_url, ref_token, "knowledge.search", path, len(asked), 1)
            for conc in (1, 8):
                o = bench(ours_url, ours_token, "knowledge.search", path, a.n, conc)
                r = None if a.ours_only else bench(ref_url, ref_token, "knowledge.search", path, a.n, conc)
                rows.append((f"{words}-word queries", conc, r, o))
            o = known_item(ours_url, ours_token, name, asked)
            r = None if a.ours_only else known_item(ref_url, ref_token, name, asked)
            relevance.append((words, len(asked), r, o))
    rss = (rss_mib(ref_pid) if ref_pid else float("nan"), rss_mib(ours_pid))
    # Anonymous memory is what the daemon holds itself; file-backed is the mapped index and
    # passage files, which the kernel may drop and read again.
    ours_split = (rss_mib(ours_pid, "RssAnon"), rss_mib(ours_pid, "RssFile"))
    sh([a.ours, "daemon", "stop"], env=env)
    if not a.ours_only:
        sh(["bash", os.path.join(PEER, "stop-reference.sh"), "17419"])
    corpus = figures[10]["corpus"]
    print(f"documents {a.docs} x{a.copies}: {figures[10]['items']} items, {figures[10]['chunks']} passages, "
          f"{corpus.get('bytes', 0) / 1e6:.1f} MB; {a.n} calls per cell")
    print(f"{'':24} {'clients':>7} {'ref p50 ms':>11} {'ours p50 ms':>12} {'p50 ratio':>10} {'ref calls/s':>12} {'ours calls/s':>13} {'throughput x':>13} {'errors r/o':>10}")
    nan = {"p50_ms": float("nan"), "calls_per_s": float("nan"), "errors": "-"}
    for what, conc, r, o in rows:
        r = r or nan
        print(f"{what:24} {conc:>7} {r['p50_ms']:>11.2f} {o['p50_ms']:>12.2f} {r['p50_ms'] / max(o['p50_ms'], 1e-6):>10.1f} "
              f"{r['calls_per_s']:>12.1f} {o['calls_per_s']:>13.1f} {o['calls_per_s'] / max(r['calls_per_s'], 1e-6):>13.1f} {r['errors']:>5}/{o['errors']}")
    for words in (10, 4):
        inproc = figures[words]["searchInProcess"]
        print(f"ours in process, {words}-word queries: p50 {inproc['p50Ms']:.3f} ms, p95 {inproc['p95Ms']:.3f} ms "
              f"({inproc['n']} searches)")
    print(f"migrate apply (CLI, cold): reference {ref_cold[0]:.2f} s, ours {ours_cold[0]:.2f} s ({ref_cold[0] / ours_cold[0]:.1f}x)")
    print(f"index build (CLI, cold):   reference {ref_cold[1]:.2f} s, ours {ours_cold[1]:.2f} s ({ref_cold[1] / ours_cold[1]:.1f}x)")
    for words, n, r, o in relevance:
        r = r or (float("nan"),) * 3
        print(f"known item, {words}-word queries ({n}): recall@1 / recall@10 / MRR reference {r[0]:.3f} / {r[1]:.3f} / {r[2]:.3f}, "
              f"ours {o[0]:.3f} / {o[1]:.3f} / {o[2]:.3f}")
    print(f"resident memory after the run: reference {rss[0]:.1f} MiB, ours {rss[1]:.1f} MiB "
          f"(anonymous {ours_split[0]:.1f}, file-backed {ours_split[1]:.1f})")
    shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("project", nargs="?")
    ap.add_argument("--docs")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--known", type=int, default=200, help="known-item queries asked of each daemon, per length")
    ap.add_argument("--ours", default=os.path.join(HERE, "..", "target", "dist", "theurian"))
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--ours-only", action="store_true")
    a = ap.parse_args()
    a.ours = os.path.realpath(a.ours)
    if a.docs:
        return docs_main(a)
    if not a.project:
        ap.error("give PROJECT_DIR or --docs DIR")
    project = os.path.realpath(a.project)
    name = os.path.basename(project)

    if not a.ours_only:
        sh(["bash", os.path.join(PEER, "run-reference.sh"), project, "17419"])
    data, env = serve_ours(a.ours, project, name, 17420)
    ours_pid = json.loads(sh([a.ours, "--json", "daemon", "status"], env=env))["pid"]
    ref_pid = None
    if not a.ours_only:
        with open(os.path.join(PEER_ROOT, "data-17419", "daemon.lock")) as f:
            ref_pid = int(re.search(r"\d+", f.read()).group(0))

    item = json.loads(sh([sys.executable, os.path.join(PEER, "mcp_call.py"), "http://127.0.0.1:17420/mcp",
                          os.path.join(data, "auth", "mcp-token"), "tools/call",
                          json.dumps({"name": "knowledge.search", "arguments": {"projectId": name, "query": "the", "limit": 1}})]).splitlines()[-1])
    first = (item.get("result", {}).get("structuredContent", {}).get("results") or [{}])[0].get("itemId", "none.none")
    tools = {
        "knowledge.search": [{"projectId": name, "query": q} for q in ("state hash", "daemon token", "migration order", "retrieval index", "review findings")],
        "knowledge.get": [{"projectId": name, "itemId": first}],
        "knowledge.status": [{"projectId": name}],
        "project.list": [{}],
        "system.capabilities": [{}],
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tool, args in tools.items():
            path = os.path.join(tmp, tool + ".json")
            with open(path, "w") as f:
                json.dump(args, f)
            for conc in (1, 8):
                if a.ours_only:
                    o = bench("http://127.0.0.1:17420/mcp", os.path.join(data, "auth", "mcp-token"), tool, path, a.n, conc)
                    rows.append((tool, conc, None, o))
                    continue
                r = bench("http://127.0.0.1:17419/mcp", os.path.join(PEER_ROOT, "data-17419", "auth", "mcp-token"), tool, path, a.n, conc)
                o = bench("http://127.0.0.1:17420/mcp", os.path.join(data, "auth", "mcp-token"), tool, path, a.n, conc)
                rows.append((tool, conc, r, o))
    rss = (rss_mib(ref_pid) if ref_pid else float("nan"), rss_mib(ours_pid))
    split = (rss_mib(ours_pid, "RssAnon"), rss_mib(ours_pid, "RssFile"))
    ref_split = ((rss_mib(ref_pid, "RssAnon"), rss_mib(ref_pid, "RssFile")) if ref_pid
                 else (float("nan"), float("nan")))
    sh([a.ours, "daemon", "stop"], env=env)
    ours_cold = cold_start_ms([a.ours, "daemon", "start", "--foreground", "--port", "17420"],
                              "http://127.0.0.1:17420/mcp", os.path.join(data, "auth", "mcp-token"), name, env=env)
    if a.ours_only:
        print(f"project {project}, {a.n} calls per cell, ours only")
        print(f"{'tool':22} {'clients':>7} {'p50 ms':>8} {'p90 ms':>8} {'calls/s':>9} {'errors':>6}")
        for tool, conc, _, o in rows:
            print(f"{tool:22} {conc:>7} {o['p50_ms']:>8.2f} {o['p90_ms']:>8.2f} {o['calls_per_s']:>9.1f} {o['errors']:>6}")
        print(f"resident memory after the run: {rss[1]:.1f} MiB ({split[0]:.1f} anonymous, {split[1]:.1f} file-backed)")
        print(f"cold start to first search answer (median of 5): {ours_cold:.1f} ms")
        return
    sh(["bash", os.path.join(PEER, "stop-reference.sh"), "17419"])
    # The same measure for the reference: its daemon started in the foreground inside its root,
    # once the one run-reference.sh started has let go of its lock.
    for _ in range(500):
        if not os.path.exists(f"/proc/{ref_pid}"):
            break
        time.sleep(0.01)
    ref_cold = cold_start_ms(["chroot", PEER_ROOT, "env", "HOME=/root", "THEURIAN_DATA_DIR=/data-17419",
                              "/opt/th/bin/theurian", "daemon", "start", "--foreground", "--port", "17419"],
                             "http://127.0.0.1:17419/mcp", os.path.join(PEER_ROOT, "data-17419", "auth", "mcp-token"), name)

    print(f"project {project}, {a.n} calls per cell")
    print(f"{'tool':22} {'clients':>7} {'ref p50 ms':>11} {'ours p50 ms':>12} {'p50 ratio':>10} {'ref calls/s':>12} {'ours calls/s':>13} {'throughput x':>13} {'errors r/o':>10}")
    for tool, conc, r, o in rows:
        print(f"{tool:22} {conc:>7} {r['p50_ms']:>11.2f} {o['p50_ms']:>12.2f} {r['p50_ms'] / max(o['p50_ms'], 1e-6):>10.1f} "
              f"{r['calls_per_s']:>12.1f} {o['calls_per_s']:>13.1f} {o['calls_per_s'] / max(r['calls_per_s'], 1e-6):>13.1f} {r['errors']:>5}/{o['errors']}")
    print(f"resident memory after the run: reference {rss[0]:.1f} MiB, ours {rss[1]:.1f} MiB ({rss[0] / max(rss[1], 1e-6):.1f}x smaller; "
          f"ours {split[0]:.1f} anonymous, {split[1]:.1f} file-backed)")
    print(f"  anonymous (private) memory: reference {ref_split[0]:.1f} MiB, ours {split[0]:.1f} MiB "
          f"({ref_split[0] / max(split[0], 1e-6):.1f}x smaller); file-backed: reference {ref_split[1]:.1f}, ours {split[1]:.1f}")
    print(f"cold start to first search answer (median of 5): reference {ref_cold:.1f} ms, ours {ours_cold:.1f} ms "
          f"({ref_cold / max(ours_cold, 1e-6):.1f}x faster)")


if __name__ == "__main__":
    main()
