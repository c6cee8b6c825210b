// make wasm-compare: the two ways the standard Go toolchain builds kbcore
// for JavaScript, side by side on the same calls (js/kbcore/wasm):
// GOOS=wasip1 with go:wasmexport (what the package ships, through
// kbcore.mjs) and GOOS=js with syscall/js (exports_js.go, started with
// the toolchain's own wasm_exec.js). Prints sizes, the start-up in a
// fresh process (median of 5, alternating) and the CPU time per call
// (best of 3 rounds, alternating) of a tiny call, the fixed toll of
// crossing the boundary, and of apply on a 100-node page.
//
//   node js/kbcore/bench/compare.mjs JS.wasm GOROOT/lib/wasm/wasm_exec.js
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { loadavg } from "node:os";
import { pathToFileURL, fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const [jsWasm, wasmExec] = process.argv.slice(2);
if (!jsWasm || !wasmExec) { console.error("usage: compare.mjs JS.wasm wasm_exec.js"); process.exit(2); }
const kbURL = new URL("../kbcore.mjs", import.meta.url).href;

// startJS loads the GOOS=js module and returns its call function.
const startJS = `async function startJS(wasmExec, jsWasm) {
  await import(wasmExec);
  const go = new globalThis.Go();
  const { instance } = await WebAssembly.instantiate((await import("node:fs")).readFileSync(jsWasm), go.importObject);
  go.run(instance); // main registers globalThis.__kbcore and blocks in select{}
  return (op, a, b, ...args) => { const [status, text] = globalThis.__kbcore(op, a, b, ...args); if (status !== 0) throw new Error(text); return text; };
}`;
const jsCall = await (new Function(`return (${startJS})`)())(pathToFileURL(wasmExec).href, jsWasm);
const kb = await import(kbURL);

function startup(variant) {
  const body = variant === "wasip1"
    ? `const t0 = performance.now(); const k = await import(${JSON.stringify(kbURL)}); k.tokenize("x");`
    : `${startJS}; const t0 = performance.now(); const c = await startJS(${JSON.stringify(pathToFileURL(wasmExec).href)}, ${JSON.stringify(jsWasm)}); c(2, 0, 0, "x");`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", `${body} console.log(performance.now() - t0); process.exit(0);`], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(r.stderr);
  return Number(r.stdout);
}

function cpuPerCall(fn, ms = 400) {
  for (let i = 0; i < 3; i++) fn(i);
  const c0 = process.cpuUsage(), t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < ms) fn(n++);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const nodes = [];
const ranks = kb.rankNBetween("", "", 100);
for (let i = 0; i < 100; i++) nodes.push({ id: `n${i}`, kind: "text", parent: null, rank: ranks[i], text: "some text with a [[Link]] and #tag" });
const doc = JSON.stringify(kb.canonical({ nodes, page: { id: "p", title: "Bench", aliases: [], dir: "", merged_into: null } }));
const cmd = (i) => JSON.stringify({ id: `c${i}`, type: "edit-text", payload: { node: "n50", text: `edited ${i}` } });
if (jsCall(1, 0, 0, doc, cmd(0)) !== kb.applyText(doc, cmd(0))) throw new Error("the two builds answer differently");

const calls = {
  toll: [() => kb.tokenize("x"), () => JSON.parse(jsCall(2, 0, 0, "x"))],
  apply: [(i) => kb.applyText(doc, cmd(i)), (i) => jsCall(1, 0, 0, doc, cmd(i))],
};
const best = { toll: [Infinity, Infinity], apply: [Infinity, Infinity] };
for (let round = 0; round < 3; round++) {
  for (const k of Object.keys(calls)) for (const v of [0, 1]) best[k][v] = Math.min(best[k][v], cpuPerCall(calls[k][v]));
}
const starts = [[], []];
for (let i = 0; i < 5; i++) { starts[0].push(startup("wasip1")); starts[1].push(startup("js")); }
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const wasiPath = fileURLToPath(new URL("../kbcore.wasm", import.meta.url));
const size = (p) => `${statSync(p).size} B, ${gzipSync(readFileSync(p), { level: 9 }).length} B gzipped`;
const rows = [
  ["size", size(wasiPath), size(jsWasm)],
  ["start in a fresh process, to the first answer", `${median(starts[0]).toFixed(1)} ms`, `${median(starts[1]).toFixed(1)} ms`],
  ["CPU per call: tokenize(\"x\") (the boundary's toll)", `${best.toll[0].toFixed(1)} µs`, `${best.toll[1].toFixed(1)} µs`],
  ["CPU per call: applyText edit-text, 100 nodes", `${(best.apply[0] / 1000).toFixed(2)} ms`, `${(best.apply[1] / 1000).toFixed(2)} ms`],
];
console.log(`load average ${loadavg()[0].toFixed(1)}`);
console.log(`${"".padEnd(50)}| ${"GOOS=wasip1 (go:wasmexport)".padEnd(32)}| GOOS=js (syscall/js)`);
for (const [k, a, b] of rows) console.log(`${k.padEnd(50)}| ${a.padEnd(32)}| ${b}`);
process.exit(0); // the GOOS=js module keeps a pending promise alive
