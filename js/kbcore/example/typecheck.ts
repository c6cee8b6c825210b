// A TypeScript consumer of @kbkit/core: scripts/ci-wasm.sh type-checks it
// (tsc --strict) in the scratch project that installed the tarball, so the
// package's kbcore.d.ts and its copy of spec/types/kbkit.d.ts hold together.
import { apply, tokenize, plan, index, rankBetween, Window, type Doc, type Command } from "@kbkit/core";

const doc: Doc = { nodes: [], page: { id: "p1", title: "T", aliases: [], dir: "", merged_into: null } };
const cmd: Command = { id: "c1", type: "create-after", payload: { node: "n1", text: "x" } };
const r = apply(doc, cmd);
if (!r.rejected) { const d: Doc = r.doc; console.log(d.nodes.length, r.inverse.length, Object.keys(r.index)); }
else { const code: string = r.rejected.code; console.log(code); }
const refs = tokenize("[[a]]").refs.map((x) => x.title);
const w = new Window(doc, 0);
const acts: string[] = w.local(cmd);
const st = w.state(); const n: number = st.seq;
const p = plan({ workspace: "00000000-0000-0000-0000-0000000000aa", pages: [doc], page: "p1", cmd });
console.log(refs, acts, n, p.effects?.length, index(doc), rankBetween("a0", null));
// @ts-expect-error: a Window needs a document
new Window();
