// The shared scenario, driven by the official TypeScript SDK's client
// against `codemode mcp`. Usage:
//
//   node scenario.mjs SDK_DIR stdio CODEMODE_BINARY ARGS...
//   node scenario.mjs SDK_DIR http URL
//
// SDK_DIR is where npm installed @modelcontextprotocol/sdk. Prints one
// JSON object per step: {"step", "text", "isError"}, or {"step", "error"}
// for a call that threw; the Go test judges them.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, mode, target, ...rest] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");

let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  // The server gets this process's environment: the OpenAPI upstream's key
  // is in it.
  transport = new StdioClientTransport({ command: target, args: rest, stderr: "inherit", env: process.env });
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(target));
}

const client = new Client({ name: "codemode-scenario", version: "1.0.0" });
await client.connect(transport);

const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const text = (res) => (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function step(name, tool, args, options) {
  try {
    const res = await client.callTool({ name: tool, arguments: args }, undefined, options);
    out({ step: name, text: text(res), isError: !!res.isError });
  } catch (e) {
    out({ step: name, error: String(e && e.message ? e.message : e) });
  }
}

const listed = await client.listTools();
out({ step: "list", text: listed.tools.map((t) => t.name).sort().join(","), isError: false });

await step("search", "search", { query: "add two numbers", limit: 5 });
await step("describe", "describe", { name: "everything.get_sum" });
// Two MCP servers and an OpenAPI operation, from one block.
await step("execute1", "execute", {
  code: [
    "from tools.everything import get_sum, echo",
    "from tools.files import read_text_file",
    "from tools.greeter import greet",
    "total = get_sum(a=2, b=40)",
    "print(total)",
    "print(echo(message='hi from python'))",
    `print(read_text_file(path=${JSON.stringify(process.env.NOTES_PATH)}))`,
    "print(greet(name='ada')['text'])",
  ].join("\n"),
});
await step("execute2", "execute", { code: "print('kept:', total)" });
// A warm session's no-op execute, timed over this transport.
const times = [];
for (let i = 0; i < 20; i++) {
  const t0 = performance.now();
  await client.callTool({ name: "execute", arguments: { code: "pass" } });
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
out({ step: "noop-ms", text: times[10].toFixed(2), isError: false });
out({ step: "list-bytes", text: String(JSON.stringify(listed).length), isError: false });

await step("typed-error", "execute", {
  code: "from tools.everything import get_sum\nfrom tools import ToolError\ntry:\n    get_sum(a='two', b=1)\nexcept ToolError as e:\n    print(type(e).__name__)",
});

const abort = new AbortController();
const started = Date.now();
setTimeout(() => abort.abort(), 1000);
await step("cancel", "execute", { code: "import time\ntime.sleep(60)\nprint('slept')" }, { signal: abort.signal });
await step("after-cancel", "execute", { code: "print('total' in globals())" });
out({ step: "cancel-ms", text: String(Date.now() - started), isError: false });

await client.close();

// The upstream's own tool list, for comparison, when its entry point is
// given.
if (process.env.EVERYTHING_MAIN) {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  const direct = new Client({ name: "codemode-scenario-direct", version: "1.0.0" });
  await direct.connect(new StdioClientTransport({ command: "node", args: [process.env.EVERYTHING_MAIN, "stdio"], stderr: "ignore" }));
  const own = await direct.listTools();
  out({ step: "upstream-list-bytes", text: String(JSON.stringify(own).length), isError: false });
  await direct.close();
}
