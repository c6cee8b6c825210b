// make wasm-compare: the two ways the standard Go toolchain builds kbcore
// for JavaScript, side by side on the same calls (js/kbcore/wasm):
// GOOS=wasip1 with go:wasmexport (what the package ships, through
// kbcore.mjs) and GOOS=js with syscall/js (exports_js.go, started with
// the toolchain's own wasm_exec.js). Prints sizes, start-up and the cost
// per call of a tiny call (the fixed toll of crossing the boundary) and of
// apply on a 100-node page.
//
//   node js/kbcore/bench/compare.mjs JS.wasm GOROOT/lib/wasm/wasm_exec.js
import { readFileSync, statSync } from "node:fs";
import { pathToFileURL, fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const [jsWasm, wasmExec] = process.argv.slice(2);
if (!jsWasm || !wasmExec) { console.error("usage: compare.mjs JS.wasm wasm_exec.js"); process.exit(2); }

function perCall(fn, ms = 1500) {
  for (let i = 0; i < 3; i++) fn(i);
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) { fn(n++); t = performance.now(); }
  return ((t - t0) * 1000) / n;
}

let t0 = performance.now();
const kb = await import("../kbcore.mjs");
const wasiStart = performance.now() - t0;

t0 = performance.now();
await import(pathToFileURL(wasmExec).href);
const go = new globalThis.Go();
const { instance } = await WebAssembly.instantiate(readFileSync(jsWasm), go.importObject);
go.run(instance); // main registers globalThis.__kbcore and blocks in select{}
const jsStart = performance.now() - t0;
const jsCall = (op, a, b, ...args) => {
  const [status, text] = globalThis.__kbcore(op, a, b, ...args);
  if (status !== 0) throw new Error(text);
  return text;
};

const nodes = [];
const ranks = kb.rankNBetween("", "", 100);
for (let i = 0; i < 100; i++) nodes.push({ id: `n${i}`, kind: "text", parent: null, rank: ranks[i], text: "some text with a [[Link]] and #tag" });
const doc = JSON.stringify(kb.canonical({ nodes, page: { id: "p", title: "Bench", aliases: [], dir: "", merged_into: null } }));
const cmd = (i) => JSON.stringify({ id: `c${i}`, type: "edit-text", payload: { node: "n50", text: `edited ${i}` } });
if (jsCall(1, 0, 0, doc, cmd(0)) !== kb.applyText(doc, cmd(0))) throw new Error("the two builds answer differently");

const wasiPath = fileURLToPath(new URL("../kbcore.wasm", import.meta.url));
const size = (p) => `${statSync(p).size} bytes, ${gzipSync(readFileSync(p), { level: 9 }).length} gzipped`;
const rows = [
  ["size", size(wasiPath), size(jsWasm)],
  ["import + instantiate + runtime start", `${wasiStart.toFixed(1)} ms`, `${jsStart.toFixed(1)} ms`],
  ["tokenize(\"x\") per call (the boundary's toll)", `${perCall(() => kb.tokenize("x")).toFixed(2)} µs`, `${perCall(() => JSON.parse(jsCall(2, 0, 0, "x"))).toFixed(2)} µs`],
  ["applyText edit-text, 100 nodes, per call", `${(perCall((i) => kb.applyText(doc, cmd(i))) / 1000).toFixed(2)} ms`, `${(perCall((i) => jsCall(1, 0, 0, doc, cmd(i))) / 1000).toFixed(2)} ms`],
];
console.log(`${"".padEnd(48)}| ${"GOOS=wasip1 (go:wasmexport)".padEnd(30)}| GOOS=js (syscall/js)`);
for (const [k, a, b] of rows) console.log(`${k.padEnd(48)}| ${a.padEnd(30)}| ${b}`);
process.exit(0); // the GOOS=js module keeps a pending promise alive
