"""Drives Theurian with the official MCP Python SDK client: initialize, list the tools, call every
tool with arguments given on stdin, and check each answer's structured content against the
tool's published outputSchema. Over Streamable HTTP (a running daemon) or stdio (the SDK starts
`theurian stdio` itself, as Claude Desktop or an IDE would).

usage: python_sdk.py http URL TOKEN < calls.json
       python_sdk.py stdio DATA_DIR THEURIAN [ARG ...] < calls.json
(calls.json: {"tool name": {arguments}, ...})
Prints one JSON line: {"tools": [...], "results": {name: {"isError": bool, "structured": bool}}}.
Exits non-zero on any transport or protocol failure."""
import asyncio
import json
import sys

import jsonschema  # installed with the SDK
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def exercise(read, write, calls: dict) -> dict:
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


async def over_http(url: str, token: str, calls: dict) -> dict:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as streams:
            return await exercise(streams[0], streams[1], calls)


async def over_stdio(data_dir: str, command: list, calls: dict) -> dict:
    # The SDK passes the server only a few variables; the data directory goes in explicitly,
    # as a client's configuration entry would put it.
    server = StdioServerParameters(
        command=command[0], args=command[1:], env={"THEURIAN_DATA_DIR": data_dir}
    )
    async with stdio_client(server) as streams:
        return await exercise(streams[0], streams[1], calls)


if __name__ == "__main__":
    calls = json.load(sys.stdin)
    mode = sys.argv[1]
    if mode == "http":
        answer = over_http(sys.argv[2], sys.argv[3], calls)
    elif mode == "stdio":
        answer = over_stdio(sys.argv[2], sys.argv[3:], calls)
    else:
        raise SystemExit(f"unknown mode {mode!r}: use http or stdio")
    print(json.dumps(asyncio.run(answer)))
