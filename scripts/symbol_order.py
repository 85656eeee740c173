#!/usr/bin/env python3
"""Regenerates cli/symbol-order.txt: the functions a serving daemon runs, hottest first.

usage: scripts/symbol_order.py [--binary target/dist/theurian] [--out cli/symbol-order.txt]

Why: the kernel maps a program's code into a process in 64 KiB windows around each page it
touches. The daemon runs about 3 MB of the binary's 14 MB of code, but scattered through the
whole image, so nearly all of it ends up resident. Release builds hand this list to the linker
(cli/build.rs, `--symbol-ordering-file`), which places these functions first and together; the
daemon's code then occupies a few MB of memory instead of all of it.

How: a scratch project (a generated corpus, applied, indexed, with review and findings stores)
is served by the dist binary under valgrind's callgrind while a client initializes, lists
the tools and calls every one of them, with good and bad arguments, one client and several.
Every function callgrind saw run that the binary defines is written out, by instructions
executed, most first. Symbols that later disappear (code changed since) are skipped by the
linker, so a stale list costs memory, never correctness; rerun this after large changes.

Needs valgrind and a `--profile dist` build; not part of CI.
"""
import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PORT = 17433


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


class Client:
    """A minimal Streamable HTTP MCP client: JSON responses, the bearer token, a session id
    echoed if the server sets one."""

    def __init__(self, url, token):
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "Authorization": "Bearer " + token}
        self.next_id = 0

    def rpc(self, method, params=None):
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=self.headers, method="POST")
        with urllib.request.urlopen(req, timeout=120) as resp:
            sid = resp.headers.get("mcp-session-id")
            if sid:
                self.headers["Mcp-Session-Id"] = sid
            text = resp.read().decode()
        return json.loads(text) if text.strip() else None

    def initialize(self):
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "symbol-order", "version": "0"}})
        req = urllib.request.Request(self.url, data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
                                     headers=self.headers, method="POST")
        urllib.request.urlopen(req, timeout=60).read()

    def call(self, name, arguments):
        return self.rpc("tools/call", {"name": name, "arguments": arguments})


def workload(url, token, project):
    c = Client(url, token)
    c.initialize()
    c.rpc("tools/list", {})
    first = c.call("knowledge.search", {"projectId": project, "query": "retry", "limit": 1})
    results = first.get("result", {}).get("structuredContent", {}).get("results") or [{}]
    item = results[0].get("itemId", "none.none")
    evidence = {"agentId": "symbol-order", "taskId": "t", "model": "m", "reasoning": "r"}
    calls = [
        ("project.list", {}),
        ("system.capabilities", {}),
        ("knowledge.status", {"projectId": project}),
        ("knowledge.get", {"projectId": project, "itemId": item}),
        ("knowledge.get", {"projectId": project, "itemId": item, "includeUnapproved": True}),
        ("review.findings", {"projectId": project}),
        ("review.findings", {"projectId": project, "q": "retry", "limit": 5}),
        ("review.search", {"projectId": project, "limit": 3}),
        ("review.search", {"projectId": project, "q": "lock"}),
        ("knowledge.proposeChange", {"projectId": project, "itemId": "decision.symbol-order-probe", "title": "Probe",
                                     "kind": "decision", "owner": "o", "author": "a", "description": "d", "body": "b\n",
                                     "contentType": "text/markdown", "evidence": evidence}),
        ("knowledge.generateMigrationDraft", {"projectId": project, "evidence": evidence, "document": {
            "author": "a", "operations": [{"op": "changeOwner", "itemId": item, "owner": "x"}]}}),
        ("review.generateKnowledgeCandidate", {"projectId": project, "repository": "o/r", "recordKey": "PRRT_x",
                                               "fixCommit": "0" * 40, "itemId": "rule.probe", "title": "t", "body": "b",
                                               "kind": "rule", "category": "architecture-rule", "owner": "o",
                                               "author": "a", "description": "d", "evidence": evidence,
                                               "sourceAnchors": []}),
        # Refusals: the seat, an unknown project, an unknown tool.
        ("knowledge.search", {"projectId": project, "query": 5}),
        ("knowledge.search", {"projectId": "no-such-project", "query": "x"}),
        ("knowledge.nothing", {}),
    ]
    queries = ["state hash", "daemon token", "migration order", "retrieval index", "review findings", "go", "a b",
               "retry policy backoff", "\"exact phrase\" here"]
    for q in queries:
        calls.append(("knowledge.search", {"projectId": project, "query": q}))
        calls.append(("knowledge.search", {"projectId": project, "query": q, "limit": 3, "maxTokens": 200,
                                           "includeUnapproved": True}))
    calls.append(("knowledge.search", {"projectId": project, "query": "retry", "useDense": True}))
    for name, arguments in calls:
        c.call(name, arguments)
    c.call("knowledge.search", {"projectId": project, "query": "x" * 5000})


def hot_symbols(callgrind_out, defined):
    """Function names with their self cost (instructions), from a callgrind file written with
    --compress-strings=no and --compress-pos=no."""
    cost = {}
    current = None
    skip_next = False
    with open(callgrind_out, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                current = line[3:].strip()
                cost.setdefault(current, 0)
                continue
            if line.startswith("calls="):
                skip_next = True  # the next line is the call's inclusive cost, not self cost
                continue
            if skip_next:
                skip_next = False
                continue
            if current and line[:1].isdigit():
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    cost[current] += int(parts[1])
    ordered = sorted((n for n in cost if n in defined), key=lambda n: (-cost[n], n))
    return ordered


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "dist", "theurian"))
    ap.add_argument("--out", default=os.path.join(ROOT, "cli", "symbol-order.txt"))
    a = ap.parse_args()
    binary = os.path.realpath(a.binary)
    with tempfile.TemporaryDirectory(prefix="symbol-order-") as tmp:
        project = os.path.join(tmp, "corpus")
        data = os.path.join(tmp, "data")
        env = dict(os.environ, THEURIAN_DATA_DIR=data)
        sh([binary, "--json", "bench", "generate", project, "--items", "300"])
        sh(["git", "init", "-q", "-b", "main"], cwd=project)
        sh(["git", "add", "-A"], cwd=project)
        sh(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "corpus"], cwd=project)
        sh([binary, "--json", "project", "register", "--project-id", "probe"], cwd=project, env=env)
        sh([binary, "--json", "migrate", "apply"], cwd=project, env=env)
        sh([binary, "--json", "index", "build"], cwd=project, env=env)
        for optional in (["review", "build"], ["findings", "build"]):
            subprocess.run([binary, "--json", *optional], cwd=project, env=env, capture_output=True)
        out = os.path.join(tmp, "callgrind.out")
        daemon = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no", "--compress-pos=no",
             "--dump-instr=no", f"--callgrind-out-file={out}",
             binary, "daemon", "start", "--foreground", "--port", str(PORT)],
            cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{PORT}/mcp"
        token_file = os.path.join(data, "auth", "mcp-token")
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=5).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            daemon.kill()
            sys.exit("the daemon did not come up under valgrind")
        with open(token_file) as f:
            token = f.read().strip()
        workload(url, token, "probe")
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: workload(url, token, "probe"), range(4)))
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=300)
        defined = set()
        for line in sh(["nm", "--defined-only", binary]).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                defined.add(parts[2])
        ordered = hot_symbols(out, defined)
    with open(a.out, "w") as f:
        f.write("\n".join(ordered) + "\n")
    print(f"{len(ordered)} functions written to {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
