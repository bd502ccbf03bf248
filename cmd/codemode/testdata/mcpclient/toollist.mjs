// Prints the size in bytes of the tools/list result that the official
// TypeScript SDK's client receives from a stdio MCP server, all pages
// joined, as JSON.stringify writes it, and the number of tools. Usage:
//
//   node toollist.mjs SDK_DIR COMMAND ARGS...
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [sdkDir, command, ...args] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(join(sdkDir, "node_modules/@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const client = new Client({ name: "codemode-toollist", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "ignore", env: process.env }));
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : undefined);
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
process.stdout.write(JSON.stringify({ bytes: JSON.stringify({ tools }).length, tools: tools.length }) + "\n");
await client.close();
