// A typed Theurian client over the official MCP TypeScript SDK.
//
// The types come from `./types.ts`, generated from the same JSON Schemas the daemon compiles
// against; this file is the only hand-written part. It adds what every integrator would
// otherwise rewrite: typed `callTool`, refusals as an error carrying their code, automatic
// retries on CAPACITY_EXCEEDED, a protocol-version check at connect, and pinning to a snapshot.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import {
  PINNABLE_TOOLS,
  PROTOCOL_VERSION,
  type RefusalMeta,
  type ToolName,
  type Tools,
} from "./types.js";

export * from "./types.js";

/** A tool's input type, by wire name. */
export type ToolInput<N extends ToolName> = Tools[N]["input"];
/** A tool's response type (its `structuredContent`), by wire name. */
export type ToolResponse<N extends ToolName> = Tools[N]["response"];
/** Every refusal code the daemon sends in a refused call's `_meta.code`. */
export type RefusalCode = RefusalMeta["code"];

/** A call the daemon answered with a refusal (`isError: true`). Match on `code`. */
export class TheurianRefusal extends Error {
  constructor(
    readonly tool: ToolName,
    readonly code: RefusalCode,
    readonly retryable: boolean,
    readonly retryAfterMs: number | undefined,
    message: string,
  ) {
    super(`${tool} refused (${code}): ${message}`);
    this.name = "TheurianRefusal";
  }
}

/** The daemon speaks a different Theurian protocol than these types describe. */
export class TheurianVersionError extends Error {
  constructor(
    readonly server: string,
    readonly client: string,
  ) {
    super(
      `the daemon speaks ${server} but this client was generated for ${client}: regenerate or upgrade the client`,
    );
    this.name = "TheurianVersionError";
  }
}

/** An answer that does not have the shape the contract promises. */
export class TheurianProtocolError extends Error {
  constructor(
    readonly tool: ToolName,
    message: string,
  ) {
    super(`${tool}: ${message}`);
    this.name = "TheurianProtocolError";
  }
}

/** How a client behaves; every field has a default. */
export interface ClientOptions {
  /** How many times a CAPACITY_EXCEEDED refusal is retried before it is returned; 0 turns retries off. Default 3. */
  capacityRetries?: number;
  /** The longest wait before one retry, in milliseconds, whatever `retryAfterMs` asks. Default 5000. */
  maxRetryWaitMs?: number;
}

const DEFAULTS: Required<ClientOptions> = { capacityRetries: 3, maxRetryWaitMs: 5000 };

/** The daemon's data directory: `$THEURIAN_DATA_DIR` when set and non-empty, else `~/.theurian`. */
export function dataDir(): string {
  const fromEnv = process.env.THEURIAN_DATA_DIR;
  return fromEnv ? fromEnv : join(homedir(), ".theurian");
}

/** The URL and token of the daemon recorded in a data directory, read as the CLI reads them. */
export async function locate(dir: string = dataDir()): Promise<{ url: string; token: string }> {
  const tokenPath = join(dir, "auth", "mcp-token");
  const token = (await readFile(tokenPath, "utf8").catch(() => "")).trim();
  if (!token) {
    throw new Error(`no token at ${tokenPath}: run \`theurian setup\`, or set THEURIAN_DATA_DIR`);
  }
  const lockPath = join(dir, "daemon.lock");
  let port: unknown;
  try {
    port = JSON.parse(await readFile(lockPath, "utf8")).port;
  } catch {
    port = undefined;
  }
  if (typeof port !== "number" || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`no running daemon is recorded in ${lockPath}: start one with \`theurian daemon start\``);
  }
  return { url: `http://127.0.0.1:${port}/mcp`, token };
}

/** A connected client: one MCP session with a Theurian daemon. */
export class TheurianClient {
  private constructor(
    private readonly mcp: Client,
    private readonly options: Required<ClientOptions>,
    /** The protocol version the daemon reported. */
    readonly serverProtocol: string,
  ) {}

  /** Connects to the daemon at `url` (`http://127.0.0.1:7419/mcp`) with its bearer token. */
  static async connect(url: string, token: string, options: ClientOptions = {}): Promise<TheurianClient> {
    const mcp = new Client({ name: "theurian-client-ts", version: "0.1.0" });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    await mcp.connect(transport);
    const settings = { ...DEFAULTS, ...options };
    // Listing the tools lets the SDK check every answer against its published output schema.
    await mcp.listTools();
    const probe = new TheurianClient(mcp, settings, PROTOCOL_VERSION);
    const capabilities = await probe.callTool("system.capabilities", {});
    if (capabilities.protocolVersion !== PROTOCOL_VERSION) {
      await mcp.close();
      throw new TheurianVersionError(capabilities.protocolVersion, PROTOCOL_VERSION);
    }
    return probe;
  }

  /** Connects to the daemon a data directory records (default: as {@link dataDir} finds it). */
  static async fromDataDir(dir?: string, options: ClientOptions = {}): Promise<TheurianClient> {
    const { url, token } = await locate(dir);
    return TheurianClient.connect(url, token, options);
  }

  /** Calls one tool with typed arguments and returns its typed answer, or throws a refusal. */
  async callTool<N extends ToolName>(name: N, args: ToolInput<N>): Promise<ToolResponse<N>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.callOnce(name, args);
      } catch (error) {
        const again =
          error instanceof TheurianRefusal &&
          error.code === "CAPACITY_EXCEEDED" &&
          attempt < this.options.capacityRetries;
        if (!again) throw error;
        const wait = Math.min(error.retryAfterMs ?? 100, this.options.maxRetryWaitMs);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** A view of this client that sends `snapshotId` on every project-scoped call. */
  pinned(snapshotId: string): PinnedClient {
    if (!/^[0-9a-f]{64}$/.test(snapshotId)) {
      throw new Error("a snapshot id is 64 lowercase hex characters: pass a stateHash or retrieval.snapshotId");
    }
    return new PinnedClient(this, snapshotId);
  }

  /** Ends the session. */
  async close(): Promise<void> {
    await this.mcp.close();
  }

  private async callOnce<N extends ToolName>(name: N, args: ToolInput<N>): Promise<ToolResponse<N>> {
    const result = await this.mcp.callTool({ name, arguments: args as Record<string, unknown> });
    if (result.isError) {
      const meta = (result._meta ?? {}) as Partial<RefusalMeta>;
      const text = Array.isArray(result.content)
        ? result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n")
        : "";
      if (typeof meta.code !== "string") {
        throw new TheurianProtocolError(name, `a refusal without _meta.code: ${text}`);
      }
      throw new TheurianRefusal(name, meta.code, meta.retryable === true, meta.retryAfterMs, text);
    }
    if (result.structuredContent === undefined) {
      throw new TheurianProtocolError(name, "an answer without structuredContent");
    }
    return result.structuredContent as ToolResponse<N>;
  }
}

/** A client whose project-scoped calls all read one snapshot; see {@link TheurianClient.pinned}. */
export class PinnedClient {
  constructor(
    private readonly client: TheurianClient,
    /** The state every project-scoped call reads. */
    readonly snapshotId: string,
  ) {}

  /** As {@link TheurianClient.callTool}, with `snapshotId` set on every tool that takes it. */
  callTool<N extends ToolName>(name: N, args: ToolInput<N>): Promise<ToolResponse<N>> {
    const pinnable = (PINNABLE_TOOLS as readonly string[]).includes(name);
    const sent = pinnable ? { ...args, snapshotId: this.snapshotId } : args;
    return this.client.callTool(name, sent as ToolInput<N>);
  }
}
