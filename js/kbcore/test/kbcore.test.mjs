// The module's own behaviour beyond the spec's cases (which adapter.mjs
// runs): errors, the Window's lifecycle, text in both forms. Run with
// `node --test js/kbcore/test/` after make wasm (scripts/ci-wasm.sh does,
// against the installed package).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as kb from "@kbkit/core";

const page = { id: "p1", title: "T", aliases: [], dir: "", merged_into: null };
const doc = kb.canonical({ nodes: [{ id: "a", rank: "a0", text: "x" }], page });

test("a document that is not one throws, naming why; a bad command is a rejection", () => {
  assert.throws(() => kb.apply("{", { id: "c", type: "edit-text", payload: {} }), /invalid document/);
  assert.throws(() => kb.apply({ nodes: [{ id: "a", rank: "a0", text: "x", parent: "b" }], page }, { id: "c" }), /missing parent "b"/);
  assert.deepEqual(kb.apply(doc, { id: "c", type: "nope", payload: {} }).rejected.code, "unknown-type");
  assert.deepEqual(kb.apply(doc, { id: "c", type: "edit-text", payload: 7 }).rejected.code, "invalid-payload");
  assert.throws(() => kb.rankBetween("a1", "a0"));
  assert.throws(() => kb.apply(doc), /argument 2 is missing/);
  assert.throws(() => kb.plan({ workspace: "w", pages: [], page: "p1" }), /cmd is missing/);
});

test("documents and commands as objects or JSON text answer the same; the input is not modified", () => {
  const cmd = { id: "c1", type: "edit-text", payload: { node: "a", text: "[[B]] <&> \u00e9 \ud83d\ude00" } };
  const before = JSON.stringify(doc);
  const a = kb.apply(doc, cmd), b = JSON.parse(kb.applyText(JSON.stringify(doc), JSON.stringify(cmd)));
  assert.deepEqual(a, b);
  assert.equal(a.doc.nodes[0].text, cmd.payload.text);
  assert.equal(JSON.stringify(doc), before);
  assert.deepEqual(kb.index(a.doc), a.index);
});

test("a lone surrogate reaches the reducer as U+FFFD (spec/ADAPTER.md section 1)", () => {
  const r = kb.apply(doc, { id: "c1", type: "edit-text", payload: { node: "a", text: "x\ud800y" } });
  assert.equal(r.doc.nodes[0].text, "x\ufffdy");
});

test("a Window keeps its state between calls and refuses calls once closed", () => {
  const w = new kb.Window(doc, 3);
  assert.deepEqual(w.local({ id: "c1", type: "edit-text", payload: { node: "a", text: "hi" } }), ["send:c1"]);
  assert.deepEqual(w.state().pending, ["c1"]);
  assert.deepEqual(w.echo(4, { id: "c1", type: "edit-text", payload: { node: "a", text: "hi" } }), []);
  assert.deepEqual([w.state().seq, w.state().pending, w.state().server.nodes[0].text], [4, [], "hi"]);
  assert.deepEqual(w.echo(6, { id: "x", type: "edit-text", payload: { node: "a", text: "yo" } }), ["refetch"]);
  assert.deepEqual(w.undo(["u1"]), ["send:u1"]);
  assert.deepEqual(w.undo(["u2"]), ["toast:nothing-to-undo"]);
  w.close();
  w.close(); // twice is fine
  assert.throws(() => w.state(), /closed/);
  assert.throws(() => new kb.Window(doc, -1), /negative/);
  assert.throws(() => new kb.Window("{"), /invalid document/);
});

test("ranks", () => {
  const rs = kb.rankNBetween(null, null, 5);
  assert.equal(rs.length, 5);
  assert.deepEqual([...rs].sort(), rs);
  const m = kb.rankBetween(rs[0], rs[1]);
  assert.ok(rs[0] < m && m < rs[1]);
});

test("many windows and calls do not leak handles", () => {
  for (let i = 0; i < 2000; i++) new kb.Window(doc, 0).close();
  const big = "x".repeat(1 << 20);
  assert.equal(kb.tokenize(big).refs.length, 0);
});
