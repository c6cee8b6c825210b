// make wasm-bench's Node side: the cold load of @kbkit/core and the cost
// per call of edit-text on a 100- and a 10,000-node page through the
// package, with the Node example adapter's JavaScript edit-text
// (speckit/adapters/node) beside it, and the native Go figures of
// BenchmarkEditText (js/kbcore/wasm) read from the file given as
// --go FILE. Prints one table and where the time goes.
//
//   node js/kbcore/bench/bench.mjs --go out/wasm-bench-go.txt [--json FILE]
import { spawnSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import * as kb from "../kbcore.mjs";
import { apply as jsApply } from "../../../speckit/adapters/node/adapter.mjs";

const arg = (name) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined; };
const goFile = arg("--go");
if (!goFile) { console.error("usage: bench.mjs --go GO-BENCH-OUTPUT [--json FILE]"); process.exit(2); }

// The page of BenchmarkEditText: groups of 100, a top-level node with 99
// children each.
function page(n) {
  const groups = Math.ceil(n / 100), top = kb.rankNBetween("", "", groups), kids = kb.rankNBetween("", "", 99);
  const nodes = [];
  for (let g = 0; g < groups && nodes.length < n; g++) {
    nodes.push({ id: `g${g}`, kind: "text", parent: null, rank: top[g], text: `heading g${g}` });
    for (let k = 0; k < 99 && nodes.length < n; k++) {
      nodes.push({ id: `g${g}k${k}`, kind: "text", parent: `g${g}`, rank: kids[k], text: "some text with a [[Link]] and #tag" });
    }
  }
  return kb.canonical({ nodes, page: { id: "p", title: "Bench", aliases: [], dir: "", merged_into: null } });
}

// perCall runs fn in batches of about 20 ms for about ms milliseconds
// (after a warm-up) and returns the median batch's microseconds per call:
// of this process's CPU time (all threads: V8's collector too; on a
// shared machine the wall time counts the waits for a core) and of wall
// time. The median keeps a batch that met a collection or a busy
// neighbour from moving the figure.
function perCall(fn, ms = 1500) {
  let n = 0;
  const w0 = performance.now();
  while (performance.now() - w0 < 20 || n < 3) fn(n++);
  const batch = Math.max(1, Math.round(n * 20 / (performance.now() - w0)));
  const got = [];
  const t0 = performance.now();
  while (performance.now() - t0 < ms || got.length < 5) {
    const c0 = process.cpuUsage(), b0 = performance.now();
    for (let i = 0; i < batch; i++) fn(n++);
    const c = process.cpuUsage(c0);
    got.push({ cpu: (c.user + c.system) / batch, wall: ((performance.now() - b0) * 1000) / batch });
  }
  got.sort((a, b) => a.cpu - b.cpu);
  return got[Math.floor(got.length / 2)];
}

const half = ({ cpu, wall }) => ({ cpu: cpu / 2, wall: wall / 2 });

// coldLoad: a fresh node process imports the package; the time from
// before the import to the first apply answered, median of runs.
function coldLoad(runs = 5) {
  const url = new URL("../kbcore.mjs", import.meta.url).href;
  const script = `const t0 = performance.now(); const k = await import(${JSON.stringify(url)}); const t1 = performance.now();
k.tokenize("x"); console.log(JSON.stringify({ importMs: t1 - t0, firstCallMs: performance.now() - t1 }));`;
  const got = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`cold load: ${r.stderr}`);
    got.push(JSON.parse(r.stdout));
  }
  got.sort((a, b) => a.importMs - b.importMs);
  return got[Math.floor(runs / 2)];
}

function goFigures(text) {
  const out = {};
  for (const m of text.matchAll(/^BenchmarkEditText\/([^/\s]+)\/n=(\d+)(?:-\d+)?\s+\d+\s+([\d.]+) ns\/op\s+([\d.]+) cpu-ns\/op/gm)) {
    out[`${m[1]}/${m[2]}`] = { wall: Number(m[3]) / 1000, cpu: Number(m[4]) / 1000 };
  }
  return out;
}

const wasmPath = fileURLToPath(new URL("../kbcore.wasm", import.meta.url));
const wasmBytes = readFileSync(wasmPath);
const go = goFigures(readFileSync(goFile, "utf8"));
const rows = [];
const enc = new TextEncoder(), dec = new TextDecoder();
for (const n of [100, 10_000]) {
  const doc = page(n), target = `g${Math.floor(n / 100 / 2)}k50`;
  const docText = JSON.stringify(doc);
  const cmd = (i) => ({ id: `c${i}`, type: "edit-text", payload: { node: target, text: `edited [[Other]] text ${i}` } });
  const check = kb.apply(doc, cmd(0));
  if (check.rejected) throw new Error(JSON.stringify(check.rejected));
  const answer = kb.applyText(doc, cmd(0));
  const w = new kb.Window(doc, 1);
  const r = {
    n,
    docBytes: enc.encode(docText).length,
    goApply: go[`kbcore.Apply/${n}`],
    goApplyJSON: go[`apply-json/${n}`],
    wasmWindow: half(perCall((i) => { const c = cmd(i); w.local(c); w.echo(i + 2, c); })),
    wasmApplyText: perCall((i) => kb.applyText(docText, cmd(i))),
    wasmCanonical: perCall(() => kb.canonical(docText)), // read the document's JSON, write it
    wasmApply: perCall((i) => kb.apply(doc, cmd(i))),
    jsAdapter: perCall((i) => jsApply(doc, cmd(i))),
    // The boundary's parts, measured on their own on the same bytes.
    copyIn: perCall(() => enc.encodeInto(docText, new Uint8Array(docText.length * 3))),
    copyOut: perCall(() => dec.decode(enc.encode(answer))) ,
    jsJSON: perCall(() => JSON.parse(JSON.stringify(doc)) && JSON.parse(answer)),
  };
  w.close();
  rows.push(r);
}
const cold = coldLoad();
const gz = gzipSync(wasmBytes, { level: 9 }).length;

const f = (us) => (us == null ? "n/a" : us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`);
const load = (await import("node:os")).loadavg()[0], cores = (await import("node:os")).availableParallelism();
console.log(`@kbkit/core: kbcore.wasm ${statSync(wasmPath).size} bytes, ${gz} gzipped (target 1,572,864)`);
console.log(`cold load in Node ${process.versions.node}: import ${cold.importMs.toFixed(1)} ms (read, compile, instantiate, Go runtime start), first call ${cold.firstCallMs.toFixed(2)} ms (median of 5 fresh processes)`);
console.log("");
console.log(`CPU time per call (this process, all threads); load average ${load.toFixed(1)} on ${cores} cores; wall times in --json`);
console.log("edit-text                                             |   100 nodes |  10,000 nodes");
console.log("------------------------------------------------------|-------------|--------------");
const line = (label, key) => console.log(`${label.padEnd(54)}| ${f(rows[0][key]?.cpu).padStart(11)} | ${f(rows[1][key]?.cpu).padStart(12)}`);
line("native Go kbcore.Apply (parsed document)", "goApply");
line("native Go apply: JSON doc in, doc+inverse+index out", "goApplyJSON");
line("wasm Window.local + echo, per apply (doc stays inside)", "wasmWindow");
line("wasm applyText(doc JSON text, cmd)", "wasmApplyText");
line("wasm apply(doc object, cmd) -> object", "wasmApply");
line("Node example adapter's JavaScript edit-text", "jsAdapter");
console.log(`document JSON: ${rows[0].docBytes} and ${rows[1].docBytes} bytes`);
console.log("");
console.log("where the time of wasm apply(doc, cmd) goes:");
for (const r of rows) {
  const copies = r.copyIn.cpu + r.copyOut.cpu, inside = r.wasmApplyText.cpu - copies;
  const docJSON = r.wasmCanonical.cpu - copies / 2; // canonical's answer is the document alone
  console.log(`  ${String(r.n).padStart(6)} nodes: JavaScript's JSON.stringify + JSON.parse ${f(r.jsJSON.cpu)}; ` +
    `the copies across the boundary (UTF-16 <-> UTF-8) ${f(copies)}; Go inside wasm ${f(inside)}: ` +
    `reading and writing the document's JSON ${f(docJSON)}, the index and its JSON ${f(inside - docJSON - r.wasmWindow.cpu)}, ` +
    `the reducer ${f(r.wasmWindow.cpu)}. The same Go work natively: ${f(r.goApplyJSON?.cpu)} (wasm ${(inside / r.goApplyJSON?.cpu).toFixed(1)}x).`);
}
const jsonOut = arg("--json");
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ wasm_bytes: statSync(wasmPath).size, wasm_gzip: gz, load, cores, cold, rows }, null, 1));
