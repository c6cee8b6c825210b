// A kbkit adapter skeleton in TypeScript (spec/ADAPTER.md): the protocol
// loop, typed with spec/types/kbkit.d.ts, and two commands implemented
// here, edit-text and set-outputs. The tokenizer and the index come from
// the Node example (../node/adapter.mjs); replace them, and add commands
// to `implemented`, as your implementation grows. Run it with
//
//   npm ci && npx tsc -p .      (in speckit/adapters/typescript)
//   kbkit spec run --impl "node speckit/adapters/typescript/build/adapter.js" \
//       --expect speckit/adapters/typescript/expectations.yaml
//
// Rules of the protocol this loop keeps: one JSON object per line on
// stdout, replies only (logs go to stderr); every request gets exactly one
// reply, T_ok or error; error 10 for what is not implemented (the case is
// skipped), 12 for a request that cannot be read, 13 for an exception.

import { createInterface } from "node:readline";

import type {
  AdapterReply,
  ApplyOk,
  ApplyRequest,
  CommandType,
  Doc,
  DocNode,
  ErrorReply,
  InitOk,
  Output,
  Rejection,
  TokenizeOk,
} from "../../../../spec/types/kbkit.js";
import { indexDoc, tokenize, tokenizeFormula } from "../../node/adapter.mjs";

/** Thrown for a request this adapter does not implement: answered with error 10. */
class NotSupported extends Error {}

type Applied = { doc: Doc; inverse: { type: CommandType; payload: unknown }[] } | { rejected: Rejection };
type CommandImpl = (doc: Doc, payload: unknown) => Applied;

const reject = (code: Rejection["code"], message: string): Applied => ({ rejected: { code, message } });
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** The payload's fields if it is an object with only the given keys, else a rejection. */
function fields(type: string, payload: unknown, keys: string[]): Record<string, unknown> | Applied {
  if (!isObject(payload)) return reject("invalid-payload", `${type}: the payload is not an object`);
  for (const k of Object.keys(payload)) {
    if (!keys.includes(k)) return reject("invalid-payload", `${type}: unknown field ${k}`);
  }
  return payload;
}

const isApplied = (v: Record<string, unknown> | Applied): v is Applied => "rejected" in v && isObject(v.rejected);

function replaceNode(doc: Doc, old: DocNode, next: DocNode): Doc {
  return { ...doc, nodes: doc.nodes.map((n) => (n === old ? next : n)) };
}

function editText(doc: Doc, payload: unknown): Applied {
  const p = fields("edit-text", payload, ["node", "text"]);
  if (isApplied(p)) return p;
  if (p.node != null && typeof p.node !== "string") return reject("invalid-payload", "edit-text: node is not a string");
  if (p.text != null && typeof p.text !== "string") return reject("invalid-payload", "edit-text: text is not a string");
  if (typeof p.text !== "string") return reject("invalid-payload", "edit-text: text is required");
  if (typeof p.node !== "string") return reject("invalid-payload", "edit-text: node is required");
  const old = doc.nodes.find((n) => n.id === p.node);
  if (!old) return reject("node-not-found", `node ${JSON.stringify(p.node)} not found`);
  return {
    doc: replaceNode(doc, old, { ...old, text: p.text }),
    inverse: [{ type: "edit-text", payload: { node: old.id, text: old.text } }],
  };
}

function isOutput(v: unknown): v is Output {
  return isObject(v) && typeof v.mime === "string" && typeof v.data === "string" &&
    Object.keys(v).every((k) => k === "mime" || k === "data");
}

function setOutputs(doc: Doc, payload: unknown): Applied {
  const p = fields("set-outputs", payload, ["node", "outputs"]);
  if (isApplied(p)) return p;
  if (typeof p.node !== "string") return reject("invalid-payload", "set-outputs: node must be a string");
  if (!Array.isArray(p.outputs) || !p.outputs.every(isOutput)) {
    return reject("invalid-payload", "set-outputs: outputs must be a list of {mime, data}");
  }
  const old = doc.nodes.find((n) => n.id === p.node);
  if (!old) return reject("node-not-found", `node ${JSON.stringify(p.node)} not found`);
  if (old.kind !== "code") return reject("not-a-code-cell", `node ${JSON.stringify(p.node)} is a ${old.kind} node`);
  const outputs = p.outputs.map((o) => ({ mime: o.mime, data: o.data }));
  return {
    doc: replaceNode(doc, old, { ...old, outputs }),
    inverse: [{ type: "set-outputs", payload: { node: old.id, outputs: old.outputs ?? [] } }],
  };
}

/** The commands this adapter applies; init_ok lists them, so cases of other types are skipped. */
const implemented: Partial<Record<CommandType, CommandImpl>> = {
  "edit-text": editText,
  "set-outputs": setOutputs,
};

function apply(req: ApplyRequest): ApplyOk {
  const reply = { type: "apply_ok" as const, in_reply_to: req.msg_id };
  const impl = typeof req.cmd.type === "string" ? implemented[req.cmd.type as CommandType] : undefined;
  if (!impl) throw new NotSupported(`command type ${JSON.stringify(req.cmd.type)}`);
  const page = req.doc.page;
  if (page.title === "") return { ...reply, rejected: { code: "page-not-found", message: "the page is unborn" } };
  if (page.merged_into != null) return { ...reply, rejected: { code: "page-merged", message: `the page was merged into ${page.merged_into}` } };
  const cmdID: unknown = req.cmd.id;
  if (cmdID != null && typeof cmdID !== "string") return { ...reply, rejected: { code: "invalid-payload", message: "the command's id is not a string" } };
  const r = impl(req.doc, req.cmd.payload);
  if ("rejected" in r) return { ...reply, rejected: r.rejected };
  return { ...reply, doc: r.doc, inverse: r.inverse, index: indexDoc(r.doc) };
}

const info: Omit<InitOk, "type" | "in_reply_to"> = {
  implementation: "kbkit-typescript-skeleton",
  version: "0.1.0",
  suites: ["commands", "tokenizer"],
  commands: Object.keys(implemented) as CommandType[],
};

const errorReply = (id: number | null, code: number, text: string): ErrorReply => ({ type: "error", in_reply_to: id, code, text });

/** handle answers one request. */
function handle(msg: Record<string, unknown>): AdapterReply {
  const id = msg.msg_id;
  if (typeof msg.type !== "string" || typeof id !== "number" || !Number.isInteger(id)) {
    return errorReply(typeof id === "number" && Number.isInteger(id) ? id : null, 12, "a request needs type and msg_id");
  }
  try {
    switch (msg.type) {
      case "init":
        if (msg.protocol !== 1 && msg.protocol !== 2) return errorReply(id, 10, `protocol ${String(msg.protocol)} is not supported`);
        return { type: "init_ok", in_reply_to: id, ...info };
      case "tokenize": {
        if (typeof msg.text === "string") {
          const t = tokenize(msg.text);
          return { type: "tokenize_ok", in_reply_to: id, refs: t.refs, label: t.label, deps: [] } satisfies TokenizeOk;
        }
        if (typeof msg.formula === "string") {
          const f = tokenizeFormula(msg.formula);
          return { type: "tokenize_ok", in_reply_to: id, refs: f.refs, label: null, deps: f.deps } satisfies TokenizeOk;
        }
        return errorReply(id, 12, "tokenize needs text or formula");
      }
      case "apply":
        if (!isObject(msg.doc) || !isObject(msg.cmd)) return errorReply(id, 12, "apply needs doc and cmd");
        return apply(msg as unknown as ApplyRequest);
      default:
        return errorReply(id, 10, `${msg.type} is not supported`);
    }
  } catch (e) {
    if (e instanceof NotSupported) return errorReply(id, 10, `${e.message} is not supported`);
    return errorReply(id, 13, e instanceof Error ? e.stack ?? e.message : String(e));
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (line.trim() === "") return;
  let reply: AdapterReply;
  try {
    const msg: unknown = JSON.parse(line);
    reply = isObject(msg) ? handle(msg) : errorReply(null, 12, "not a JSON object");
  } catch (e) {
    reply = errorReply(null, 12, `not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
