// Search a project, then fetch the top hit, with `theurian demo` running:
//   npm run build && node dist/examples/search.js [QUERY] [PROJECT]
// The daemon is found through THEURIAN_DATA_DIR (the demo prints the one to use) or ~/.theurian.

import { TheurianClient, TheurianRefusal, type KnowledgeSearchInput } from "../src/index.js";

const [query = "idempotency key reuse", projectId = "acme-ledger"] = process.argv.slice(2);

const client = await TheurianClient.fromDataDir();
try {
  const search: KnowledgeSearchInput = { projectId, query, limit: 3 };
  const found = await client.callTool("knowledge.search", search);
  console.log(`knowledge.search ${JSON.stringify(query)}: ${found.count} result(s), retriever ${found.retrieval.mode}`);
  found.results.forEach((hit, rank) => {
    console.log(`  ${rank + 1}. ${hit.itemId} [${hit.trustLevel}, ${hit.status}] ${hit.title}`);
  });
  const top = found.results[0];
  if (top) {
    // Pinned to the state the search read, so the item cannot change between the two calls.
    const item = await client
      .pinned(found.retrieval.snapshotId)
      .callTool("knowledge.get", { projectId, itemId: top.itemId });
    console.log(`\nknowledge.get ${item.itemId} (revision ${item.revisionId}):`);
    for (const line of item.body.split("\n").slice(0, 12)) console.log(`  ${line}`);
  }
} catch (error) {
  if (error instanceof TheurianRefusal) {
    console.error(`refused (${error.code}): ${error.message}`);
    process.exitCode = 1;
  } else {
    throw error;
  }
} finally {
  await client.close();
}
