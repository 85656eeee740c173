#!/usr/bin/env python3
"""Ranking agreement between this build and the reference (theurian 0.5.3) on one project.

usage: scripts/agreement.py PROJECT_DIR [--ours target/dist/theurian] [--queries 300] [--seed 7]

Serves PROJECT_DIR with both daemons (as scripts/side_by_side.py does: the reference on port
17419 through ../shared/peer/run-reference.sh, ours on 17420 from a scratch data directory),
sends both the same knowledge.search queries, and compares the answers: how often the first
result is the same item, how often the first ten are the same items in the same order, the mean
overlap of the first ten, and how often each side put the query's own source document first
(known-item relevance). Queries are five consecutive words of a sentence from the project's
knowledge files, plus single words. Needs root (the reference runs in a chroot). Not part of CI.

--show N prints the first N disagreements side by side.
"""
import argparse
import json
import os
import random
import re
import subprocess
import time
import urllib.request

from side_by_side import serve_ours

HERE = os.path.dirname(os.path.abspath(__file__))
PEER = os.path.join(HERE, "..", "..", "shared", "peer")
PEER_ROOT = os.environ.get("PEER_ROOT", os.path.expanduser("~/.cache/theurian-peer"))


def sh(args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


class Client:
    """One MCP session over Streamable HTTP (JSON or event-stream answers)."""

    def __init__(self, url, token_file):
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "Authorization": "Bearer " + open(token_file).read().strip()}
        self.next_id = 0
        _, h = self.post({"method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "agreement", "version": "0"}}})
        if h.get("mcp-session-id"):
            self.headers["Mcp-Session-Id"] = h["mcp-session-id"]
        self.post({"method": "notifications/initialized"}, notify=True)

    def post(self, body, notify=False):
        body = dict(body, jsonrpc="2.0")
        if not notify:
            self.next_id += 1
            body["id"] = self.next_id
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=self.headers, method="POST")
        with urllib.request.urlopen(req, timeout=120) as resp:
            headers = {k.lower(): v for k, v in resp.headers.items()}
            text = resp.read().decode("utf-8", "replace")
        if "text/event-stream" in headers.get("content-type", ""):
            datas = ["\n".join(l[5:].lstrip() for l in b.splitlines() if l.startswith("data:"))
                     for b in text.split("\n\n")]
            datas = [d for d in datas if d]
            return (json.loads(datas[-1]) if datas else None), headers
        return (json.loads(text) if text.strip() else None), headers

    def search(self, project, query):
        msg, _ = self.post({"method": "tools/call", "params": {
            "name": "knowledge.search", "arguments": {"projectId": project, "query": query, "limit": 10}}})
        sc = (msg or {}).get("result", {}).get("structuredContent") or {}
        if not (sc.get("retrieval") or {}).get("indexed"):
            raise SystemExit(f"{self.url} answered {query!r} without its index: {json.dumps(sc)[:300]}")
        return [(r["itemId"], tuple(r.get("foundBy", []))) for r in sc.get("results", [])]


def queries(project, n, seed):
    rng = random.Random(seed)
    docs = []
    for root, _, files in os.walk(os.path.join(project, ".theurian", "knowledge")):
        for f in sorted(files):
            if f.endswith(".md"):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    docs.append(fh.read())
    out = []
    words_seen = []
    for _ in range(n * 4):
        if len(out) >= n or not docs:
            break
        text = rng.choice(docs)
        sentences = [s for s in re.split(r"[.!?\n]", text) if len(s.split()) >= 6]
        if not sentences:
            continue
        words = rng.choice(sentences).split()
        start = rng.randrange(0, len(words) - 4)
        out.append(" ".join(words[start:start + 5]))
        words_seen.extend(w for w in words if len(w) >= 3)
    singles = rng.sample(sorted(set(words_seen)), min(len(set(words_seen)), max(1, n // 5)))
    return out + singles


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("project")
    ap.add_argument("--ours", default=os.path.join(HERE, "..", "target", "dist", "theurian"))
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--show", type=int, default=0)
    a = ap.parse_args()
    project = os.path.realpath(a.project)
    name = os.path.basename(project)

    sh(["bash", os.path.join(PEER, "run-reference.sh"), project, "17419"])
    data, env = serve_ours(a.ours, project, name, 17420)
    try:
        ref = Client("http://127.0.0.1:17419/mcp", os.path.join(PEER_ROOT, "data-17419", "auth", "mcp-token"))
        ours = Client("http://127.0.0.1:17420/mcp", os.path.join(data, "auth", "mcp-token"))
        qs = queries(project, a.queries, a.seed)
        # The reference may answer its first calls from the scan while it opens its index.
        for _ in range(120):
            try:
                ref.search(name, qs[0])
                break
            except SystemExit:
                time.sleep(0.5)
        same1 = same10 = same_found = 0
        overlap = 0.0
        shown = 0
        for q in qs:
            r, o = ref.search(name, q), ours.search(name, q)
            ri, oi = [x[0] for x in r], [x[0] for x in o]
            same1 += (ri[:1] == oi[:1])
            same10 += (ri == oi)
            same_found += (r == o)
            overlap += len(set(ri) & set(oi)) / max(len(set(ri) | set(oi)), 1)
            if ri != oi and shown < a.show:
                shown += 1
                print(f"query {q!r}")
                for i in range(max(len(r), len(o))):
                    left = f"{r[i][0]} {','.join(r[i][1])}" if i < len(r) else ""
                    right = f"{o[i][0]} {','.join(o[i][1])}" if i < len(o) else ""
                    print(f"  {i + 1:>2} {left:60} {right}")
        n = max(len(qs), 1)
        print(json.dumps({
            "project": project, "queries": len(qs),
            "sameFirst": round(same1 / n, 4), "sameTopTen": round(same10 / n, 4),
            "sameTopTenAndFoundBy": round(same_found / n, 4),
            "meanJaccardTopTen": round(overlap / n, 4),
        }))
    finally:
        sh([a.ours, "daemon", "stop"], env=env)
        sh(["bash", os.path.join(PEER, "stop-reference.sh"), "17419"])


if __name__ == "__main__":
    main()
