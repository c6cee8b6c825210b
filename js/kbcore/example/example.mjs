import { apply, tokenize, Window } from "@kbkit/core";

let doc = { nodes: [], page: { id: "p1", title: "Budget", aliases: [], dir: "", merged_into: null } };
const r = apply(doc, { id: "c1", type: "create-after", payload: { node: "n1", text: "cash: $610,000" } });
if (r.rejected) throw new Error(r.rejected.code); // e.g. "node-not-found": a result, not an exception
doc = r.doc; // canonical JSON of spec/README.md; the input is never modified
console.log(JSON.stringify(r.inverse), JSON.stringify(r.index.n1.label));
console.log(tokenize("see [[Q1 plan]] #todo").refs.map((ref) => `${ref.kind}:${ref.title}`).join(" "));
const w = new Window(doc, 1); // the client's window: optimistic edits, echoes, rebase (spec/window.md)
console.log(w.local({ id: "c2", type: "edit-text", payload: { node: "n1", text: "cash: $5" } }), w.state().rendered.nodes[0].text);
