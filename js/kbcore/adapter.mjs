#!/usr/bin/env node
// The kbkit adapter of @kbkit/core (spec/ADAPTER.md): every suite, every
// command type, answered by the package's public API alone, so that
//
//   kbkit spec run --impl "node node_modules/@kbkit/core/adapter.mjs"
//
// proves the WebAssembly reducer gives the reference's answers. NDJSON on
// stdin/stdout, one request at a time; logs go to stderr.

import { createInterface } from "node:readline";
import { apply, canonicalJSON, canonicalText, plan, tokenize, tokenizeFormula, Window } from "./kbcore.mjs";

const pkg = JSON.parse(await (await import("node:fs/promises")).readFile(new URL("./package.json", import.meta.url), "utf8"));

// windowScript runs a window request's steps on a Window: the state after
// each step and the actions it produced.
function windowScript(given, steps) {
  if (!given || given.doc == null) throw new Error("window: given.doc is missing");
  const w = new Window(given.doc, given.seq ?? 0);
  try {
    return steps.map((ev, i) => {
      const names = Object.keys(ev ?? {});
      if (names.length !== 1) throw new Error(`window: step ${i + 1}: a step needs exactly one event, got ${names.length}`);
      const e = ev[names[0]];
      let actions;
      switch (names[0]) {
        case "local": actions = w.local(e); break;
        case "echo": actions = w.echo(e.seq ?? 0, e.cmd); break;
        case "ack": actions = w.ack(e.id, e.seq ?? 0); break;
        case "reject": actions = w.reject(e.id, e.code); break;
        case "snapshot": actions = w.snapshot(e.doc, e.seq ?? 0, e.outcomes); break;
        case "undo": actions = w.undo(e.ids ?? []); break;
        case "redo": actions = w.redo(e.ids ?? []); break;
        default: throw new Error(`window: step ${i + 1}: unknown event ${names[0]}`);
      }
      return { ...w.state(), actions };
    });
  } finally {
    w.close();
  }
}

function answer(req) {
  switch (req.type) {
    case "init":
      if (req.protocol !== 1 && req.protocol !== 2) return { type: "error", code: 10, text: `protocol ${req.protocol} is not supported (this adapter speaks 1 and 2: the case suites)` };
      return { type: "init_ok", implementation: pkg.name, version: pkg.version,
        suites: ["commands", "tokenizer", "window", "planner", "canonical"] };
    case "apply":
      if (req.doc == null || req.cmd == null) return { type: "error", code: 12, text: "apply needs doc and cmd" };
      return { type: "apply_ok", ...apply(req.doc, req.cmd) };
    case "tokenize":
      if ((typeof req.text === "string") === (typeof req.formula === "string")) {
        return { type: "error", code: 12, text: "tokenize needs exactly one of text and formula" };
      }
      if (typeof req.text === "string") return { type: "tokenize_ok", ...tokenize(req.text), deps: [] };
      return { type: "tokenize_ok", ...tokenizeFormula(req.formula), label: null };
    case "window":
      return { type: "window_ok", states: windowScript(req.given, req.steps ?? []) };
    case "plan":
      return { type: "plan_ok", ...plan(req) };
    case "canonical":
      if (("doc" in req) === ("value" in req)) return { type: "error", code: 12, text: "canonical needs exactly one of doc and value" };
      // The value as JSON text again: the same doubles and strings, read
      // and written by kbcore inside the module.
      return { type: "canonical_ok", text: "doc" in req ? canonicalText(req.doc) : canonicalJSON(JSON.stringify(req.value)) };
    default:
      return { type: "error", code: 10, text: `unknown message type ${JSON.stringify(req.type)}` };
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (line.trim() === "") continue;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    process.stdout.write(JSON.stringify({ type: "error", in_reply_to: null, code: 12, text: `malformed request: ${e.message}` }) + "\n");
    continue;
  }
  const id = Number.isInteger(req?.msg_id) ? req.msg_id : null;
  let reply;
  try {
    reply = id === null ? { type: "error", code: 12, text: "the request has no msg_id" } : answer(req);
  } catch (e) {
    reply = { type: "error", code: 13, text: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify({ ...reply, in_reply_to: id }) + "\n");
}
