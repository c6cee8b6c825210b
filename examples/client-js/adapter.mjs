#!/usr/bin/env node
// The client suite of the kbkit adapter protocol (spec/ADAPTER.md section
// 6) for the example client of window.mjs: kbkit starts this program,
// opens windows on a server through it, makes their users act and asks
// what they show. The client does its own networking, to the URL it is
// given (kbkit's fault proxy).
//
//   kbkit conformance run --client "node examples/client-js/adapter.mjs" --seeds 100 --faults
//   node examples/client-js/adapter.mjs --broken new-id-on-retry   (a deliberate bug; --help lists them)
//
// stdout carries replies only (one JSON object a line); logs go to stderr.

import { dirname, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

// The client's dependencies (package.json) come from `npm ci` in this
// directory; without them the adapter says so in one line on stderr and
// exits 2 before init, which kbkit reports as the reason the run cannot
// start.
let BROKEN, ClientWindow;
try {
  ({ BROKEN, ClientWindow } = await import("./window.mjs"));
} catch (err) {
  if (err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
  const abs = dirname(fileURLToPath(import.meta.url));
  const rel = relative(process.cwd(), abs);
  const dir = rel === "" ? "." : rel.startsWith("..") ? abs : rel;
  console.error(`adapter.mjs: ${err.message.split(" imported from ")[0]}: run \`npm ci\` in ${dir} first (the client's dependencies are not installed)`);
  process.exit(2);
}

// The intents this client performs (spec/ADAPTER.md section 7).
// With --page-intents it also declares the page operations its reducer
// folds (rename-page, set-aliases, merge-page).
const INTENTS = ["create-after", "edit-text", "move-node", "indent", "outdent", "delete", "set-cell", "set-outputs", "undo", "redo"];

const { values } = parseArgs({ options: { broken: { type: "string" }, "page-intents": { type: "boolean" }, help: { type: "boolean", short: "h" } } });
if (values["page-intents"]) INTENTS.push("rename-page", "set-aliases", "merge-page");
if (values.help) {
  console.error("usage: node adapter.mjs [--broken BUG] [--page-intents]\nbugs:\n" + Object.entries(BROKEN).map(([k, v]) => `  ${k}: ${v}`).join("\n"));
  process.exit(0);
}
const broken = values.broken ?? "";
if (broken && !BROKEN[broken]) {
  console.error(`adapter.mjs: unknown --broken ${broken} (one of ${Object.keys(BROKEN).join(", ")})`);
  process.exit(2);
}

const windows = new Map();
const log = (name) => (msg) => process.stderr.write(`${name}: ${msg}\n`);

function reply(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function win(name) {
  const w = windows.get(name);
  if (!w) throw Object.assign(new Error(`no open window ${JSON.stringify(name)}`), { code: 12 });
  return w;
}

async function handle(msg) {
  const id = msg.msg_id;
  switch (msg.type) {
    case "init":
      if (msg.protocol !== 2) return { type: "error", in_reply_to: id, code: 10, text: `protocol ${msg.protocol} is not supported (the client suite is protocol 2)` };
      return { type: "init_ok", in_reply_to: id, implementation: "kbkit example client (JavaScript, @trpc/client v11)" + (broken ? ` --broken ${broken}` : ""),
        version: "0.1.0", suites: ["client"], intents: INTENTS };
    case "open": {
      if (windows.has(msg.window)) throw Object.assign(new Error(`window ${msg.window} is open already`), { code: 12 });
      const w = new ClientWindow({ url: msg.url, token: msg.token, deviceId: msg.device_id, pageId: msg.page_id, broken, log: log(msg.window) });
      windows.set(msg.window, w);
      try {
        await w.open(msg.timeout_ms ?? 10000);
      } catch (err) {
        // No snapshot in time (spec/ADAPTER.md section 7, open): say so
        // before the runner's time is up.
        w.close();
        windows.delete(msg.window);
        return { type: "error", in_reply_to: id, code: 13, text: `open: kb.page failed: ${err?.message ?? err}` };
      }
      return { type: "open_ok", in_reply_to: id, state: w.state() };
    }
    case "intent": {
      const w = win(msg.window);
      if (!INTENTS.includes(msg.intent)) return { type: "error", in_reply_to: id, code: 10, text: `intent ${msg.intent} is not implemented` };
      if (msg.intent === "undo") w.undo(msg.ids ?? []);
      else if (msg.intent === "redo") w.redo(msg.ids ?? []);
      else w.local({ id: msg.id, type: msg.intent, payload: msg.payload });
      return { type: "intent_ok", in_reply_to: id, state: w.state() };
    }
    case "state":
      return { type: "state_ok", in_reply_to: id, state: win(msg.window).state() };
    case "close":
      win(msg.window).close();
      windows.delete(msg.window);
      return { type: "close_ok", in_reply_to: id };
    default:
      return { type: "error", in_reply_to: id, code: 10, text: `message type ${msg.type} is not supported` };
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    reply({ type: "error", in_reply_to: null, code: 12, text: `malformed request: ${err.message}` });
    continue;
  }
  try {
    reply(await handle(msg));
  } catch (err) {
    reply({ type: "error", in_reply_to: msg.msg_id ?? null, code: err.code === 12 ? 12 : 13, text: String(err?.stack ?? err) });
  }
}
for (const w of windows.values()) w.close();
process.exit(0);
