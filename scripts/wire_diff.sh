#!/usr/bin/env bash
# Usage: scripts/wire_diff.sh OLD_BINARY NEW_BINARY CORPUS_DIR [ITEM_ID]  (CORPUS_DIR holds .theurian/)
# Same read-only tool calls, over stdio, to two theurian builds serving one project state;
# prints whether every answer is byte-identical after masking wall-clock fields.
set -euo pipefail
A=$1; B=$2; CORPUS=$3
work=$(mktemp -d)
export THEURIAN_DATA_DIR=$work/data
mkdir -p $work/proj && cp -r "$CORPUS/.theurian" $work/proj/ && chmod -R u+w $work/proj
cd $work/proj && git init -q && git add -A && git -c user.email=a@b -c user.name=a commit -qm corpus
$B project register >/dev/null 2>&1 || $B project register
pid=$($B --json project list | python3 -c 'import json,sys; d=json.load(sys.stdin); p=d.get("projects",d); print((p[0] if isinstance(p,list) else p)["projectId"])')
$B migrate apply >/dev/null && $B index build >/dev/null
hash=$($B --json migrate status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("activeStateHash") or d.get("stateHash") or "")')
item=${4:-architecture.single-local-daemon-over-streamable-http}  # an item the corpus holds
python3 - "$pid" "$item" "$hash" > $work/calls.jsonl <<'PY'
import json,sys
pid,item,h=sys.argv[1:4]
calls=[("project.list",{}),("system.capabilities",{}),("knowledge.status",{"projectId":pid}),
("project.status",{"projectId":pid}),("system.indexStatus",{"projectId":pid}),
("knowledge.search",{"projectId":pid,"query":"daemon authentication token"}),
("knowledge.search",{"projectId":pid,"query":"proposal review merge","limit":3,"maxTokens":400}),
("knowledge.get",{"projectId":pid,"itemId":item}),
("knowledge.trace",{"projectId":pid,"itemId":item,"depth":2}),
("knowledge.checkFreshness",{"projectId":pid}),
("knowledge.getContext",{"projectId":pid,"task":"add a new MCP tool to the daemon","paths":["server/src/tools/x.rs"]}),
("knowledge.search",{"projectId":pid,"query":"   "}),
("knowledge.get",{"projectId":pid,"itemId":"no.such-item"}),
("review.search",{"projectId":pid,"q":"x"}),
("knowledge.status",{"projectId":"nope"})]
if h: calls.append(("knowledge.listChanges",{"projectId":pid,"since":h}))
print(json.dumps({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wirediff","version":"0"}}}))
print(json.dumps({"jsonrpc":"2.0","method":"notifications/initialized"}))
for i,(n,a) in enumerate(calls,1):
    print(json.dumps({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":n,"arguments":a}}))
PY
n=$(wc -l < $work/calls.jsonl)
for bin in A B; do
  exe=${!bin}
  timeout 60 $exe stdio < $work/calls.jsonl > $work/out.$bin 2>$work/err.$bin || true
  python3 -c 'import json,sys; L=[l for l in open(sys.argv[1]) if l.strip()]; L.sort(key=lambda l: json.loads(l).get("id",-1)); sys.stdout.write("".join(L))' $work/out.$bin > $work/sorted.$bin
  sed -E 's/"(asOf|as_of|recordedAt|generatedAt|checkedAt|ageDays|now|builtAt|serverInfo)":("[^"]*"|[0-9]+|\{[^}]*\})/"\1":"~"/g' $work/sorted.$bin | sed -E 's/\\"(asOf|checkedAt|generatedAt)\\": \\"[^\\]*\\"/"\1":"~"/g' > $work/masked.$bin
done
echo "calls: $((n-2)); answers: $(wc -l < $work/masked.A) / $(wc -l < $work/masked.B)"
if cmp -s $work/masked.A $work/masked.B; then echo "identical"; else echo "DIFFER"; diff <(tr ',' '\n' < $work/masked.A) <(tr ',' '\n' < $work/masked.B) | head -20; fi
echo "work: $work"
