// @kbkit/core: kbkit's reducer (kbcore, Go) compiled to WebAssembly, as
// an ES module for Node.js 20+ and browsers. Every answer is the one the
// native reducer gives: the canonical JSON of spec/README.md (documents,
// commands, inverses, the index), the tokenizer of spec/tokenizer.md, the
// planner of spec/planner.md and the Window of spec/window.md.
//
// The module is loaded once, at import (top-level await), from the
// kbcore.wasm beside this file: read with node:fs in Node.js, fetched
// from the URL relative to this module in a browser. No network beyond
// that URL, no dependencies.

const OP = {
  apply: 1, tokenize: 2, tokenizeFormula: 3, index: 4, plan: 5, rankBetween: 6, rankNBetween: 7,
  windowOpen: 8, windowLocal: 9, windowEcho: 10, windowReject: 11, windowSnapshot: 12,
  windowUndo: 13, windowRedo: 14, windowState: 15, windowClose: 16, canonical: 17, windowAck: 18,
  canonicalValue: 19,
};

const WASM = new URL("./kbcore.wasm", import.meta.url);

async function wasmBytes() {
  if (typeof process !== "undefined" && process.versions && process.versions.node && WASM.protocol === "file:") {
    const { readFile } = await import("node:fs/promises");
    return readFile(WASM);
  }
  const res = await fetch(WASM);
  if (!res.ok) throw new Error(`@kbkit/core: fetching ${WASM}: ${res.status} ${res.statusText}`);
  return res.arrayBuffer();
}

// The WASI functions Go's wasip1 runtime needs to start and run: no files,
// no arguments, no environment; stdout and stderr go to the console; the
// clock and randomness serve the runtime only (kbcore reads neither). Any
// other import answers ENOSYS.
const ENOSYS = 52, EBADF = 8;

class Exit extends Error {
  constructor(code) { super(`@kbkit/core: the module exited with status ${code}`); this.code = code; }
}

function wasi(getMemory, crypto) {
  const view = () => new DataView(getMemory().buffer);
  const bytes = () => new Uint8Array(getMemory().buffer);
  const lines = { 1: "", 2: "" };
  const dec = new TextDecoder();
  return {
    args_sizes_get(argc, size) { view().setUint32(argc, 0, true); view().setUint32(size, 0, true); return 0; },
    args_get() { return 0; },
    environ_sizes_get(n, size) { view().setUint32(n, 0, true); view().setUint32(size, 0, true); return 0; },
    environ_get() { return 0; },
    clock_time_get(id, precision, out) {
      const ns = id === 0 ? BigInt(Date.now()) * 1000000n : BigInt(Math.round(performance.now() * 1e6));
      view().setBigUint64(out, ns, true);
      return 0;
    },
    random_get(ptr, len) {
      for (let off = 0; off < len; off += 65536) {
        crypto.getRandomValues(bytes().subarray(ptr + off, ptr + Math.min(len, off + 65536)));
      }
      return 0;
    },
    fd_write(fd, iovs, n, written) {
      if (fd !== 1 && fd !== 2) return EBADF;
      let total = 0;
      for (let i = 0; i < n; i++) {
        const p = view().getUint32(iovs + 8 * i, true), l = view().getUint32(iovs + 8 * i + 4, true);
        lines[fd] += dec.decode(bytes().subarray(p, p + l));
        total += l;
      }
      const parts = lines[fd].split("\n");
      lines[fd] = parts.pop();
      for (const line of parts) (fd === 1 ? console.log : console.error)(line);
      view().setUint32(written, total, true);
      return 0;
    },
    fd_fdstat_get(fd) { return fd <= 2 ? 0 : EBADF; },
    fd_prestat_get() { return EBADF; },
    sched_yield() { return 0; },
    proc_exit(code) { throw new Exit(code); },
  };
}

async function load() {
  const module = await WebAssembly.compile(await wasmBytes());
  // Node.js before 19 has Web Crypto only as node:crypto's webcrypto.
  const webcrypto = globalThis.crypto ?? (await import("node:crypto")).webcrypto;
  let memory;
  const impl = wasi(() => memory, webcrypto);
  const imports = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    const ns = (imports[imp.module] ??= {});
    ns[imp.name] = impl[imp.name] ?? (() => ENOSYS);
  }
  const instance = await WebAssembly.instantiate(module, imports);
  memory = instance.exports.memory;
  instance.exports._initialize();
  return instance.exports;
}

const ex = await load();
const enc = new TextEncoder();
const dec = new TextDecoder();

// put writes s (a string, or a value written as JSON) as argument i.
function put(i, s) {
  if (typeof s !== "string") s = JSON.stringify(s);
  if (s === undefined) throw new TypeError(`@kbkit/core: argument ${i + 1} is missing (or not JSON)`);
  const cap = s.length * 3;
  const ptr = ex.kb_arg(i, cap);
  const { written } = enc.encodeInto(s, new Uint8Array(ex.memory.buffer, ptr, cap));
  ex.kb_arg_len(i, written);
}

// call runs one operation and returns its answer as text (JSON); an
// error of the module is thrown.
function callText(op, a, b, ...args) {
  for (let i = 0; i < args.length; i++) put(i, args[i]);
  const status = ex.kb_call(op, BigInt(a), BigInt(b));
  const text = dec.decode(new Uint8Array(ex.memory.buffer, ex.kb_out_ptr(), ex.kb_out_len()));
  if (status !== 0) throw new Error(text);
  return text;
}

const call = (op, a, b, ...args) => JSON.parse(callText(op, a, b, ...args));

/** Applies one command to a document: {doc, inverse, index} or {rejected}. */
export const apply = (doc, cmd) => call(OP.apply, 0, 0, doc, cmd);

/** apply with the answer as canonical JSON text (no JSON.parse). */
export const applyText = (doc, cmd) => callText(OP.apply, 0, 0, doc, cmd);

/** The refs and label of node text (spec/tokenizer.md). */
export const tokenize = (text) => call(OP.tokenize, 0, 0, String(text));

/** The refs and deps of a table cell's formula (spec/tokenizer.md). */
export const tokenizeFormula = (formula) => call(OP.tokenizeFormula, 0, 0, String(formula));

/** The whole page's index: node id -> entry (spec/README.md section 5). */
export const index = (doc) => call(OP.index, 0, 0, doc);

/** The canonical form of a document (every node field present). */
export const canonical = (doc) => call(OP.canonical, 0, 0, doc);

/** The canonical JSON text of a document: the bytes a server writes (spec/README.md section 1). */
export const canonicalText = (doc) => callText(OP.canonical, 0, 0, doc);

/** The canonical JSON text (RFC 8785) of JSON text; invalid JSON, a duplicate key or a lone surrogate throws. */
export const canonicalJSON = (text) => callText(OP.canonicalValue, 0, 0, String(text));

/** Plans one command against a workspace (spec/planner.md): {effects, pages} or {rejected}. */
export function plan({ workspace, pages, page, cmd }) {
  return call(OP.plan, 0, 0, { workspace, pages, page, cmd });
}

/** A rank strictly between lo and hi ("" or null: an open end). */
export const rankBetween = (lo, hi) => call(OP.rankBetween, 0, 0, lo ?? "", hi ?? "");

/** n ranks in increasing order strictly between lo and hi. */
export const rankNBetween = (lo, hi, n) => call(OP.rankNBetween, n, 0, lo ?? "", hi ?? "");

const windows = typeof FinalizationRegistry === "function"
  ? new FinalizationRegistry((h) => { try { callText(OP.windowClose, h, 0); } catch { /* closed */ } })
  : null;

/**
 * The client's window on one page (spec/window.md): a pure state machine
 * kept inside the module. Each event returns the actions the caller must
 * do, in order ("send:<id>", "refetch", "toast:<code>").
 */
export class Window {
  #h;
  constructor(doc, seq = 0) {
    this.#h = call(OP.windowOpen, seq, 0, doc);
    windows?.register(this, this.#h, this);
  }
  #event(op, seq, ...args) {
    if (this.#h === 0) throw new Error("@kbkit/core: the window is closed");
    return call(op, this.#h, seq, ...args);
  }
  local(cmd) { return this.#event(OP.windowLocal, 0, cmd); }
  echo(seq, cmd) { return this.#event(OP.windowEcho, seq, cmd); }
  ack(id, seq) { return this.#event(OP.windowAck, seq, String(id)); }
  reject(id, code) { return this.#event(OP.windowReject, 0, String(id), String(code)); }
  snapshot(doc, seq, outcomes) { return this.#event(OP.windowSnapshot, seq, doc, outcomes == null ? "" : outcomes); }
  undo(ids = []) { return this.#event(OP.windowUndo, 0, ids); }
  redo(ids = []) { return this.#event(OP.windowRedo, 0, ids); }
  /** {seq, pending (ids), rendered, server}. */
  state() { return this.#event(OP.windowState, 0); }
  /** Frees the window inside the module; later calls throw. */
  close() {
    if (this.#h === 0) return;
    windows?.unregister(this);
    callText(OP.windowClose, this.#h, 0);
    this.#h = 0;
  }
}
