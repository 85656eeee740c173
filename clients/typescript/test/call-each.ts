// The integration test's driver (tests/it/ts_client.rs): reads `{"tool": args, ...}` on stdin,
// calls each through the typed client found through THEURIAN_DATA_DIR, and prints one JSON
// report: per tool, the answer's top-level keys, or the refusal's code. The SDK has checked
// every answer against the output schema the daemon published before this script sees it.

import { TheurianClient, TheurianRefusal, TOOL_NAMES, type ToolName } from "../src/index.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const calls = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;

const client = await TheurianClient.fromDataDir();
const report: Record<string, unknown> = { protocol: client.serverProtocol };
for (const [name, args] of Object.entries(calls)) {
  if (!(TOOL_NAMES as readonly string[]).includes(name)) throw new Error(`not a tool: ${name}`);
  try {
    // The arguments come from the test as JSON; their types are the daemon's to check.
    const answer = await client.callTool(name as ToolName, args as never);
    report[name] = { keys: Object.keys(answer as object).sort() };
  } catch (error) {
    if (!(error instanceof TheurianRefusal)) throw error;
    report[name] = { code: error.code, retryable: error.retryable };
  }
}
// A pin to a state this machine never held is refused, never silently re-pinned.
const status = calls["knowledge.status"] as { projectId: string };
const pinned = client.pinned("0".repeat(64));
try {
  await pinned.callTool("knowledge.status", { projectId: status.projectId });
  report.pinned = { code: null };
} catch (error) {
  report.pinned = { code: error instanceof TheurianRefusal ? error.code : String(error) };
}
await client.close();
console.log(JSON.stringify(report));
