"""Drives a Theurian daemon with the official MCP Python SDK client (Streamable HTTP):
initialize, list the tools, call every tool with arguments given on stdin, and check each
answer's structured content against the tool's published outputSchema.

usage: python_sdk.py URL TOKEN < calls.json   (calls.json: {"tool name": {arguments}, ...})
Prints one JSON line: {"tools": [...], "results": {name: {"isError": bool, "structured": bool}}}.
Exits non-zero on any transport or protocol failure."""
import asyncio
import json
import sys

import jsonschema  # installed with the SDK
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, token: str, calls: dict) -> dict:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                listed = await session.list_tools()
                tools = {t.name: t for t in listed.tools}
                results = {}
                for name, args in calls.items():
                    r = await session.call_tool(name, args)
                    structured = r.structured_content
                    if not r.is_error:
                        schema = tools[name].output_schema
                        if schema is None:
                            raise SystemExit(f"{name}: no outputSchema published")
                        jsonschema.validate(structured, schema)
                        text = json.loads(r.content[0].text)
                        if text != structured:
                            raise SystemExit(f"{name}: text block and structuredContent differ")
                    results[name] = {"isError": bool(r.is_error), "structured": structured is not None}
                return {"tools": sorted(tools), "results": results}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], json.load(sys.stdin)))))
