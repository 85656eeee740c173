#!/usr/bin/env python3
"""Structural comparison of our schemas with the reference's published ones (a development aid;
the authoritative check is the Rust test `schema_agreement`). Usage: schema_compare.py [FILE...]

Both sides are normalised the same way: every $ref is resolved (by $id across files, or by local
fragment), and annotation keys that carry prose or identity are dropped. `required` and `enum`
are compared as sets. Prints each difference with its JSON path."""
import json, os, sys, glob

OURS = os.path.join(os.path.dirname(__file__), "..", "schemas")
THEIRS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "reference", "schemas")
# x-theurian-summary and x-theurian-intent are our codegen annotations (tool description, read-only or write-intent)
DROP = {"description", "title", "$id", "$comment", "examples", "$schema", "$defs", "default", "x-theurian-summary", "x-theurian-intent", "x-theurian-notes"}

def load_all(root):
    by_id, by_name = {}, {}
    for p in glob.glob(os.path.join(root, "**", "*.schema.json"), recursive=True):
        d = json.load(open(p))
        by_id[d.get("$id", p)] = d
        by_name[os.path.relpath(p, root)] = d
    return by_id, by_name

def resolve(node, doc, by_id, depth=0):
    if depth > 60:
        raise RuntimeError("ref depth")
    if isinstance(node, list):
        return [resolve(x, doc, by_id, depth) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        base, _, frag = ref.partition("#")
        target_doc = by_id[base] if base else doc
        target = target_doc
        for seg in [s for s in frag.split("/") if s]:
            target = target[seg]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        out = resolve(target, target_doc, by_id, depth + 1)
        if rest:
            out = dict(out); out.update(resolve(rest, doc, by_id, depth))
        return norm_keys(out)
    return norm_keys({k: resolve(v, doc, by_id, depth) for k, v in node.items()})

def norm_keys(d):
    out = {k: v for k, v in d.items() if k not in DROP}
    for k in ("required", "enum"):
        if k in out and isinstance(out[k], list):
            out[k] = sorted(out[k], key=json.dumps)
    if "type" in out and isinstance(out["type"], list):
        out["type"] = sorted(out["type"])
    return out

def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a: out.append(f"{path}/{k}: only in reference: {json.dumps(b[k])[:200]}")
            elif k not in b: out.append(f"{path}/{k}: only in ours: {json.dumps(a[k])[:200]}")
            else: diff(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)): diff(x, y, f"{path}/{i}", out)
    elif a != b or type(a) != type(b):
        out.append(f"{path}: ours {json.dumps(a)[:200]} != reference {json.dumps(b)[:200]}")

def main():
    oid, oname = load_all(OURS)
    tid, tname = load_all(THEIRS)
    # our retrieval-result lives under mcp/, the reference's under knowledge/
    remap = {"mcp/retrieval-result.schema.json": "knowledge/retrieval-result.schema.json"}
    files = sys.argv[1:] or sorted(oname)
    bad = 0
    for f in files:
        f = os.path.relpath(os.path.abspath(f), os.path.abspath(OURS)) if os.path.exists(f) else f
        ref_name = remap.get(f, f)
        if ref_name not in tname:
            print(f"{f}: no reference counterpart (ours only)"); continue
        ours = resolve(oname[f], oname[f], oid)
        theirs = resolve(tname[ref_name], tname[ref_name], tid)
        out = []; diff(ours, theirs, "", out)
        print(f"{f}: {'OK' if not out else str(len(out)) + ' differences'}")
        for line in out: print("   ", line)
        bad += bool(out)
    sys.exit(1 if bad else 0)

main()
