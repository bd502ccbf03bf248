// The shared scenario, driven by the official TypeScript SDK's client
// against `codemode mcp`. Usage:
//
//   node scenario.mjs SDK_DIR stdio CODEMODE_BINARY ARGS...
//   node scenario.mjs SDK_DIR http URL
//
// SDK_DIR is where npm installed @modelcontextprotocol/sdk. The server
// must front server-everything as "everything" and server-filesystem as
// "files" (allowed the directory of $NOTES_PATH, its write_file needing
// approval), and the greeter OpenAPI document as "greeter"; over http,
// $CODEMODE_PID is the server's process id, for the step that kills an
// upstream. Prints one
// JSON object per step: {"step", "text", "isError"}, or {"step", "error"}
// for a call that threw; the Go test judges them.
import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";
import { readdirSync, readFileSync } from "node:fs";

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

const { ElicitRequestSchema } = await sdk("types.js");

// The client can be asked for a person's approval: it answers with the
// next of elicitAnswers, and counts the questions.
const client = new Client({ name: "codemode-scenario", version: "1.0.0" }, { capabilities: { elicitation: {} } });
const elicitAnswers = [];
let elicited = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  elicited++;
  return elicitAnswers.shift() || { action: "cancel" };
});
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
// Files the code writes come back: a small one embedded, a large one as a
// link that resources/read serves.
try {
  const res = await client.callTool({ name: "execute", arguments: { code: "open('small.txt', 'w').write('a small file')\nopen('large.txt', 'w').write('z' * 100000)" } });
  const embedded = res.content.filter((c) => c.type === "resource").map((c) => c.resource.text);
  const links = res.content.filter((c) => c.type === "resource_link");
  const read = links.length ? await client.readResource({ uri: links[0].uri }) : { contents: [] };
  out({ step: "files", text: JSON.stringify({ embedded, links: links.map((l) => l.name), read: read.contents.map((c) => (c.text || "").length) }), isError: !!res.isError });
} catch (e) {
  out({ step: "files", error: String(e && e.message ? e.message : e) });
}
// A warm session's no-op execute, timed over this transport.
const times = [];
for (let i = 0; i < 20; i++) {
  const t0 = performance.now();
  await client.callTool({ name: "execute", arguments: { code: "pass" } });
  times.push(performance.now() - t0);
}
times.sort((a, b) => a - b);
out({ step: "noop-ms", text: times[10].toFixed(2), isError: false });

await step("typed-error", "execute", {
  code: "from tools.everything import get_sum\nfrom tools import ToolError\ntry:\n    get_sum(a='two', b=1)\nexcept ToolError as e:\n    print(type(e).__name__)",
});

const abort = new AbortController();
const started = Date.now();
setTimeout(() => abort.abort(), 1000);
await step("cancel", "execute", { code: "import time\ntime.sleep(60)\nprint('slept')" }, { signal: abort.signal });
await step("after-cancel", "execute", { code: "print('total' in globals())" });
out({ step: "cancel-ms", text: String(Date.now() - started), isError: false });

// Progress: a block of 2.5 s, asked with a progress token, is told how
// long it has run (the server reports every 500 ms in the test).
let progressed = 0;
await step("progress", "execute", { code: "import time\ntime.sleep(2.5)\nprint('done')" }, { onprogress: () => progressed++ });
out({ step: "progress-count", text: String(progressed), isError: false });

// Approvals: files.write_file needs one; the client approves, then
// declines.
const approved = join(dirname(process.env.NOTES_PATH), "approved.txt");
const writeCode = (path) => [
  "from tools.files import write_file, read_text_file",
  "from tools import ToolDeniedError",
  "try:",
  `    write_file(path=${JSON.stringify(path)}, content='written with approval')`,
  `    print(read_text_file(path=${JSON.stringify(path)}))`,
  "except ToolDeniedError:",
  "    print('denied')",
  "print('kept:', total)",
].join("\n");
elicitAnswers.push({ action: "accept", content: { approve: true } });
await step("approve", "execute", { code: writeCode(approved) });
elicitAnswers.push({ action: "decline" });
await step("decline", "execute", { code: writeCode(approved + ".2") });
out({ step: "elicited", text: String(elicited), isError: false });

// An upstream killed mid-session: the filesystem server, a child of the
// codemode process, found in /proc. The next call of its tools starts it
// again (the toolset reconnects, which starts a fresh process) and is
// answered.
const serverPid = mode === "stdio" ? transport.pid : Number(process.env.CODEMODE_PID);
const children = [];
for (const d of readdirSync("/proc")) {
  if (!/^\d+$/.test(d)) continue;
  try {
    const stat = readFileSync(`/proc/${d}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const cmdline = readFileSync(`/proc/${d}/cmdline`, "utf8");
    if (ppid === serverPid && cmdline.includes("server-filesystem")) children.push(Number(d));
  } catch {}
}
out({ step: "killed", text: String(children.length), isError: false });
for (const pid of children) process.kill(pid, "SIGKILL");
const killedAt = Date.now();
await step("dead-upstream", "execute", {
  code: `from tools.files import read_text_file\nfrom tools import ToolError\ntry:\n    print(read_text_file(path=${JSON.stringify(process.env.NOTES_PATH)}))\nexcept ToolError as e:\n    print(type(e).__name__, e)\nprint('kept:', total)`,
});
out({ step: "dead-upstream-ms", text: String(Date.now() - killedAt), isError: false });
await step("after-dead", "execute", { code: "from tools.everything import get_sum\nprint(get_sum(a=1, b=1))" });

await client.close();
