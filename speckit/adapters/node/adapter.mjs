#!/usr/bin/env node
// A kbkit adapter in JavaScript (Node 18+, no dependencies): the proof that
// the conformance kit works for implementations that are not Go.
//
// It speaks the adapter protocol of spec/ADAPTER.md on stdin/stdout and
// implements the tokenizer (spec/tokenizer.md), one command, edit-text
// (with the page index of spec/README.md section 5), and canonical JSON
// (spec/README.md section 1, the canonical suite). Every other command
// type gets error 10 (not supported), so those cases are skipped; what it
// is known to get wrong is listed in expectations.yaml beside it.
//
//   kbkit spec run --impl "node speckit/adapters/node/adapter.mjs" \
//       --expect speckit/adapters/node/expectations.yaml

import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

// ---- character classes (spec/tokenizer.md section 1) ----

const reWS = /^\p{White_Space}$/u;
const reL = /^\p{L}$/u;
const reM = /^\p{M}$/u;
const reNd = /^\p{Nd}$/u;
const reSc = /^\p{Sc}$/u;

const isWS = (ch) => reWS.test(ch);
const isLetter = (ch) => reL.test(ch);
const isMark = (ch) => reM.test(ch);
const isDigit = (ch) => reNd.test(ch);
const isASCIILetter = (ch) => (ch >= "a" && ch <= "z") || (ch >= "A" && ch <= "Z");
const isASCIIDigit = (ch) => ch >= "0" && ch <= "9";

// trim removes White_Space (not String.prototype.trim: that also strips
// U+FEFF and misses U+0085).
export function trim(s) {
  return s.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, "");
}

// charAt returns the code point at UTF-16 index i as a string.
function charAt(s, i) {
  const cp = s.codePointAt(i);
  return cp === undefined ? "" : String.fromCodePoint(cp);
}

function isASCIIPunct(ch) {
  const c = ch.charCodeAt(0);
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
}

function runLen(s, i, ch) {
  let j = i;
  while (j < s.length && s[j] === ch) j++;
  return j - i;
}

// ---- node text (spec/tokenizer.md sections 3-5) ----

const LINK = "link", TAG = "tag", EMBED = "embed";

export function tokenize(text) {
  const n = text.length;
  const refs = [];
  let stack = [];
  let label = parseLabel(text, 0);
  const noCloser = new Set(); // backtick run lengths known to have no closer

  const findBacktickCloser = (p, k) => {
    if (noCloser.has(k)) return -1;
    while (p < n) {
      const j = text.indexOf("`", p);
      if (j < 0) break;
      const m = runLen(text, j, "`");
      if (m === k) return j;
      p = j + m;
    }
    noCloser.add(k);
    return -1;
  };

  const close = (c, i) => {
    const paren = c === ")";
    for (let m = stack.length - 1; m >= 0; m--) {
      const o = stack[m];
      if ((o.kind === EMBED) !== paren) continue;
      stack = stack.slice(0, m);
      const title = trim(text.slice(o.inner, i));
      if (title !== "") refs.push({ kind: o.kind, title, start: o.start });
      return;
    }
  };

  const tagPosition = (i) => {
    if (i === 0) return true;
    let prev = text[i - 1];
    const c = prev.charCodeAt(0);
    if (c >= 0xdc00 && c <= 0xdfff && i >= 2) prev = charAt(text, i - 2);
    // "](" opens a Markdown link target: "[docs](#install)" is no tag.
    if (prev === "(") return i < 2 || text[i - 2] !== "]";
    return isWS(prev);
  };

  const hash = (i) => {
    if (!tagPosition(i)) return i + 1;
    if (text[i + 1] === "[") {
      const k = runLen(text, i + 1, "[");
      if (k & 1) return i + 1; // "#[" then openers: the '#' is plain text
      stack.push({ kind: TAG, start: i, inner: i + 3 });
      for (let p = i + 3; p < i + 1 + k; p += 2) stack.push({ kind: LINK, start: p, inner: p + 2 });
      return i + 1 + k;
    }
    if (text[i + 1] === ".") return i + 1;
    const [end, nonDigit] = scanTagRun(text, i + 1);
    if (end === i + 1 || !nonDigit) return i + 1;
    refs.push({ kind: TAG, title: text.slice(i + 1, end), start: i });
    return end;
  };

  let i = 0;
  while (i < n) {
    const c = text[i];
    switch (c) {
      case "\\":
        i += i + 1 < n && isASCIIPunct(text[i + 1]) ? 2 : 1;
        break;
      case "`": {
        const k = runLen(text, i, "`");
        const j = findBacktickCloser(i + k, k);
        if (j < 0) {
          i += k;
          break;
        }
        if (/[\r\n]/.test(text.slice(i + k, j))) stack = [];
        i = j + k;
        break;
      }
      case "[":
      case "(": {
        const k = runLen(text, i, c);
        const kind = c === "[" ? LINK : EMBED;
        for (let p = i + (k & 1); p < i + k; p += 2) stack.push({ kind, start: p, inner: p + 2 });
        i += k;
        break;
      }
      case "]":
      case ")":
        if (i + 1 < n && text[i + 1] === c) {
          close(c, i);
          i += 2;
        } else {
          i++;
        }
        break;
      case "#":
        i = hash(i);
        break;
      case "\n":
      case "\r":
        stack = [];
        i++;
        if (label === null) label = parseLabel(text, i);
        break;
      default:
        i++;
    }
  }
  refs.sort((a, b) => a.start - b.start);
  return { refs: refs.map((r) => ({ kind: r.kind, title: r.title })), label };
}

// scanTagRun reads tag characters from p; it returns the end once trailing
// dots are stripped and whether a character is neither a digit nor a dot.
function scanTagRun(text, p) {
  let end = p, j = p, nonDigit = false;
  while (j < text.length) {
    const ch = charAt(text, j);
    if (ch === ".") {
      j++;
      continue;
    }
    if (ch.length === 1 && ch.charCodeAt(0) < 0x80) {
      if (isASCIIDigit(ch)) {
        // a digit
      } else if (isASCIILetter(ch) || ch === "_" || ch === "-" || ch === "/") {
        nonDigit = true;
      } else {
        return [end, nonDigit];
      }
    } else if (isDigit(ch)) {
      // a digit
    } else if (isLetter(ch) || isMark(ch)) {
      nonDigit = true;
    } else {
      return [end, nonDigit];
    }
    j += ch.length;
    end = j;
  }
  return [end, nonDigit];
}

const MAX_KEY = 40; // code points

// parseLabel reads the line starting at p as "key: value", or returns null.
function parseLabel(text, p) {
  const n = text.length;
  if (p >= n) return null;
  let j = p, count = 0, keyCount = 0, keyEnd = p;
  while (j < n) {
    const ch = charAt(text, j);
    if (ch === ":") break;
    if (ch.length === 1 && ch.charCodeAt(0) < 0x80) {
      if (isASCIILetter(ch)) {
        // ok
      } else if (j === p) {
        return null; // a key starts with a letter
      } else if (isASCIIDigit(ch) || ch === "_" || ch === "-") {
        // ok
      } else if (ch === " ") {
        count++;
        j++;
        continue;
      } else {
        return null;
      }
    } else if (isLetter(ch)) {
      // ok
    } else if (j === p) {
      return null;
    } else if (!isMark(ch) && !isDigit(ch)) {
      return null;
    }
    j += ch.length;
    count++;
    keyCount = count;
    keyEnd = j;
    if (keyCount > MAX_KEY) return null;
  }
  if (keyCount === 0 || j + 1 >= n || text[j] !== ":" || (text[j + 1] !== " " && text[j + 1] !== "\t")) return null;
  let rest = text.slice(j + 1);
  const e = rest.search(/[\r\n]/);
  if (e >= 0) rest = rest.slice(0, e);
  const value = trim(rest);
  if (value === "") return null;
  const label = { key: text.slice(p, keyEnd), text: value };
  const num = parseNumber(value);
  if (num !== null) label.number = num;
  return label;
}

const reNumber = /^[+-]?(?:[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+)?(?:\.[0-9]+)?$/;

// parseNumber reads a label value as a number, or returns null.
export function parseNumber(v) {
  let s = "";
  for (const ch of v) {
    if (ch === "%" || reSc.test(ch)) continue;
    s += ch;
  }
  s = trim(s);
  if (s === "" || !reNumber.test(s) || !/[0-9]/.test(s)) return null;
  const f = Number(s.replace(/,/g, ""));
  if (!Number.isFinite(f)) return null;
  return f === 0 ? 0 : f; // no negative zero
}

// ---- formulas (spec/tokenizer.md section 6) ----

const MAX_RANGE_CELLS = 10000;

function isWordChar(ch) {
  if (ch.length === 1 && ch.charCodeAt(0) < 0x80) {
    return isASCIILetter(ch) || isASCIIDigit(ch) || ch === "_" || ch === "$";
  }
  return isLetter(ch) || isMark(ch) || isDigit(ch);
}

function isKeyChar(ch) {
  if (ch.length === 1 && ch.charCodeAt(0) < 0x80) return isASCIILetter(ch) || isASCIIDigit(ch) || ch === "_";
  return isLetter(ch) || isMark(ch) || isDigit(ch);
}

function wordEnd(v, i) {
  while (i < v.length) {
    const ch = charAt(v, i);
    if (!isWordChar(ch)) return i;
    i += ch.length;
  }
  return i;
}

const reCell = /^\$?([A-Za-z]{1,3})\$?([1-9][0-9]{0,6})$/;

function parseCell(w) {
  const m = reCell.exec(w);
  if (!m) return null;
  let col = 0;
  for (const ch of m[1].toUpperCase()) col = col * 26 + (ch.charCodeAt(0) - 64);
  return { col, row: Number(m[2]) };
}

function cellName(col, row) {
  let letters = "";
  while (col > 0) {
    col--;
    letters = String.fromCharCode(65 + (col % 26)) + letters;
    col = Math.floor(col / 26);
  }
  return letters + row;
}

function formulaLink(v, i) {
  if (v[i + 1] !== "[") return null;
  for (let j = i + 2; j < v.length; j++) {
    const c = v[j];
    if (c === "[" || c === "\r" || c === "\n") return null;
    if (c === "]") {
      if (v[j + 1] !== "]") return null;
      const title = trim(v.slice(i + 2, j));
      return title === "" ? null : { end: j + 2, title };
    }
  }
  return null;
}

function formulaKey(v, p) {
  if (p >= v.length) return -1;
  const first = charAt(v, p);
  if (!isLetter(first)) return -1;
  let j = p + first.length, count = 1;
  while (j < v.length) {
    const ch = charAt(v, j);
    if (isKeyChar(ch)) {
      j += ch.length;
      count++;
    } else if ((ch === " " || ch === "-") && j + 1 < v.length) {
      const next = charAt(v, j + 1);
      if (!isKeyChar(next)) break;
      j += 1 + next.length;
      count += 2;
    } else {
      break;
    }
    if (count > MAX_KEY) return -1;
  }
  return j;
}

export function tokenizeFormula(v) {
  const refs = [], deps = [], seen = new Set();
  if (typeof v !== "string" || v[0] !== "=") return { refs, deps };
  let budget = MAX_RANGE_CELLS;
  const add = (d) => {
    const key = "cell" in d ? "c\0" + d.cell : "p\0" + d.page + "\0" + d.label;
    if (seen.has(key)) return;
    seen.add(key);
    deps.push(d);
  };
  const addRange = (a, b) => {
    const cmin = Math.min(a.col, b.col), cmax = Math.max(a.col, b.col);
    const rmin = Math.min(a.row, b.row), rmax = Math.max(a.row, b.row);
    const area = (cmax - cmin + 1) * (rmax - rmin + 1);
    if (area > budget) {
      add({ cell: cellName(a.col, a.row) });
      add({ cell: cellName(b.col, b.row) });
      return;
    }
    budget -= area;
    for (let r = rmin; r <= rmax; r++) for (let c = cmin; c <= cmax; c++) add({ cell: cellName(c, r) });
  };
  const n = v.length;
  let i = 1;
  while (i < n) {
    const c = v[i];
    if (c === '"') {
      const j = v.indexOf('"', i + 1);
      i = j < 0 ? n : j + 1; // an unclosed string runs to the end
      continue;
    }
    if (c === "[") {
      const m = formulaLink(v, i);
      if (m === null) {
        i++;
        continue;
      }
      refs.push({ kind: LINK, title: m.title });
      i = m.end;
      if (v[i] === ":") {
        const kend = formulaKey(v, i + 1);
        if (kend > 0) {
          add({ page: m.title, label: v.slice(i + 1, kend) });
          i = kend;
        }
      }
      continue;
    }
    const ch = charAt(v, i);
    if (!isWordChar(ch)) {
      i += ch.length;
      continue;
    }
    // a word: a cell, a range, or anything else
    const end = wordEnd(v, i);
    const cell = parseCell(v.slice(i, end));
    if (cell === null || v[end] === "(") {
      i = end;
      continue;
    }
    if (end + 1 < n && v[end] === ":") {
      const end2 = wordEnd(v, end + 1);
      const cell2 = parseCell(v.slice(end + 1, end2));
      if (cell2 !== null && v[end2] !== "(") {
        addRange(cell, cell2);
        i = end2;
        continue;
      }
    }
    add({ cell: cellName(cell.col, cell.row) });
    i = end;
  }
  return { refs, deps };
}

// ---- index (spec/README.md section 5) ----

const byteOrder = (a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b)));

// cycles returns the sorted cells on a dependency cycle (Tarjan, iterative).
function cycles(vertices, edges) {
  const index = new Map(), low = new Map(), onStack = new Set();
  const stack = [], out = [];
  let next = 0;
  for (const root of vertices) {
    if (index.has(root)) continue;
    const call = [{ v: root, i: 0 }];
    index.set(root, next); low.set(root, next); next++;
    stack.push(root); onStack.add(root);
    while (call.length > 0) {
      const f = call[call.length - 1];
      const out1 = edges.get(f.v) || [];
      if (f.i < out1.length) {
        const w = out1[f.i++];
        if (!index.has(w)) {
          index.set(w, next); low.set(w, next); next++;
          stack.push(w); onStack.add(w);
          call.push({ v: w, i: 0 });
        } else if (onStack.has(w) && index.get(w) < low.get(f.v)) {
          low.set(f.v, index.get(w));
        }
        continue;
      }
      const v = f.v;
      call.pop();
      if (call.length > 0) {
        const p = call[call.length - 1].v;
        if (low.get(v) < low.get(p)) low.set(p, low.get(v));
      }
      if (low.get(v) !== index.get(v)) continue;
      const scc = [];
      for (;;) {
        const w = stack.pop();
        onStack.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1 || out1.includes(v)) out.push(...scc);
    }
  }
  return out.sort(byteOrder);
}

function indexNode(node) {
  if (node.kind === "code") return null;
  const toks = tokenize(node.text ?? "");
  const refs = toks.refs, deps = [];
  let cyc = [];
  if (node.kind === "table" && node.cells && Object.keys(node.cells).length > 0) {
    const cells = Object.keys(node.cells).sort(byteOrder);
    const edges = new Map();
    for (const c of cells) {
      const f = tokenizeFormula(node.cells[c]);
      refs.push(...f.refs);
      for (const d of f.deps) {
        deps.push({ cell: c, on: d });
        if ("cell" in d) {
          if (!edges.has(c)) edges.set(c, []);
          edges.get(c).push(d.cell);
        }
      }
    }
    cyc = cycles(cells, edges);
  }
  const entry = {};
  if (refs.length) entry.refs = refs;
  if (toks.label) entry.label = toks.label;
  if (deps.length) entry.deps = deps;
  if (cyc.length) entry.cycles = cyc;
  return Object.keys(entry).length ? entry : null;
}

export function indexDoc(doc) {
  const out = {};
  for (const node of doc.nodes ?? []) {
    const e = indexNode(node);
    if (e) out[node.id] = e;
  }
  return out;
}

// ---- commands ----

export class NotSupported extends Error {}

const rejected = (code, message) => ({ rejected: { code, message } });
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// apply applies edit-text; any other type is not supported.
export function apply(doc, cmd) {
  if (cmd.type !== "edit-text") throw new NotSupported(`command type ${JSON.stringify(cmd.type)}`);
  const page = doc.page ?? {};
  if (page.title === "") return rejected("page-not-found", "the page is unborn");
  if (page.merged_into != null) return rejected("page-merged", `the page was merged into ${page.merged_into}`);
  if (cmd.id != null && typeof cmd.id !== "string") return rejected("invalid-payload", "the command's id is not a string");
  const p = cmd.payload;
  if (!isObject(p)) return rejected("invalid-payload", "edit-text: the payload is not an object");
  for (const k of Object.keys(p)) {
    if (k !== "node" && k !== "text") return rejected("invalid-payload", `edit-text: unknown field ${k}`);
  }
  if (p.node != null && typeof p.node !== "string") return rejected("invalid-payload", "edit-text: node is not a string");
  if (p.text != null && typeof p.text !== "string") return rejected("invalid-payload", "edit-text: text is not a string");
  if (p.text == null) return rejected("invalid-payload", "edit-text: text is required");
  if (p.node == null) return rejected("invalid-payload", "edit-text: node is required");
  const nodes = doc.nodes ?? [];
  const old = nodes.find((n) => n.id === p.node);
  if (!old) return rejected("node-not-found", `node ${JSON.stringify(p.node)} not found`);
  const next = { ...doc, nodes: nodes.map((n) => (n === old ? { ...n, text: p.text } : n)) };
  return {
    doc: next,
    inverse: [{ type: "edit-text", payload: { node: old.id, text: old.text } }],
    index: indexDoc(next),
  };
}

// ---- canonical JSON (spec/README.md section 1) ----

// canonicalize writes a parsed JSON value as RFC 8785 does: JSON.stringify's
// own strings and numbers (the scheme was written from them: only '"', '\'
// and control characters escaped, numbers as ECMAScript writes them) and
// object keys sorted by UTF-16 code units, JavaScript's string order.
export function canonicalize(v) {
  if (Array.isArray(v)) return "[" + v.map(canonicalize).join(",") + "]";
  if (isObject(v)) {
    return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + canonicalize(v[k])).join(",") + "}";
  }
  if (typeof v === "number" && !Number.isFinite(v)) throw new Error(`${v} is not a JSON number`);
  return JSON.stringify(v);
}

// canonicalDoc is a document's canonical form: its nodes sorted by id
// (bytewise, as UTF-8), then RFC 8785.
export function canonicalDoc(doc) {
  const nodes = [...(doc.nodes ?? [])].sort((a, b) => Buffer.compare(Buffer.from(String(a.id)), Buffer.from(String(b.id))));
  return canonicalize({ ...doc, nodes });
}

// ---- protocol (spec/ADAPTER.md) ----

export const info = {
  implementation: "kbkit-node-example",
  version: "0.1.0",
  suites: ["commands", "tokenizer", "canonical"],
  commands: ["edit-text"],
};

const errorReply = (id, code, text) => ({ type: "error", in_reply_to: id, code, text });

// handle answers one request object.
export function handle(msg) {
  const id = msg.msg_id;
  if (typeof msg.type !== "string" || !Number.isInteger(id)) {
    return errorReply(Number.isInteger(id) ? id : null, 12, "a request needs type and msg_id");
  }
  try {
    switch (msg.type) {
      case "init":
        if (msg.protocol !== 1 && msg.protocol !== 2) return errorReply(id, 10, `protocol ${msg.protocol} is not supported`);
        return { type: "init_ok", in_reply_to: id, ...info };
      case "tokenize":
        if (typeof msg.text === "string") {
          const t = tokenize(msg.text);
          return { type: "tokenize_ok", in_reply_to: id, refs: t.refs, label: t.label, deps: [] };
        }
        if (typeof msg.formula === "string") {
          const f = tokenizeFormula(msg.formula);
          return { type: "tokenize_ok", in_reply_to: id, refs: f.refs, label: null, deps: f.deps };
        }
        return errorReply(id, 12, "tokenize needs text or formula");
      case "apply":
        if (!isObject(msg.doc) || !isObject(msg.cmd)) return errorReply(id, 12, "apply needs doc and cmd");
        return { type: "apply_ok", in_reply_to: id, ...apply(msg.doc, msg.cmd) };
      case "canonical":
        if (("doc" in msg) === ("value" in msg)) return errorReply(id, 12, "canonical needs exactly one of doc and value");
        if ("doc" in msg && !isObject(msg.doc)) return errorReply(id, 12, "canonical: doc is not an object");
        return { type: "canonical_ok", in_reply_to: id, text: "doc" in msg ? canonicalDoc(msg.doc) : canonicalize(msg.value) };
      default:
        return errorReply(id, 10, `${msg.type} is not supported`);
    }
  } catch (e) {
    if (e instanceof NotSupported) return errorReply(id, 10, e.message + " is not supported");
    return errorReply(id, 13, String(e && e.stack ? e.stack : e));
  }
}

// serve reads requests from stdin and writes replies to stdout until stdin
// ends. transform, if given, may rewrite each reply (the broken adapter).
export function serve(transform = (reply) => reply) {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on("line", (line) => {
    if (line.trim() === "") return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      process.stdout.write(JSON.stringify(errorReply(null, 12, "not JSON: " + e.message)) + "\n");
      return;
    }
    const reply = isObject(msg) ? transform(handle(msg), msg) : errorReply(null, 12, "not a JSON object");
    process.stdout.write(JSON.stringify(reply) + "\n");
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  serve();
}
