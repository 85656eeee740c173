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
"""
import argparse
import json
import os
import re
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("project")
    ap.add_argument("--ours", default=os.path.join(HERE, "..", "target", "dist", "theurian"))
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--ours-only", action="store_true")
    a = ap.parse_args()
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
