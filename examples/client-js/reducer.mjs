// The part of the kbkit reducer (spec/README.md sections 1-3) this client
// needs: the commands it lets its user make (create-after, edit-text,
// move-node, indent, outdent, delete, set-cell, set-outputs) and restore
// (the inverse of delete, for undo), and the page operations rename-page,
// set-aliases and merge-page (which adapter.mjs declares with
// --page-intents) with restore-page (the inverse of a merge), each with its
// inverse. A command of
// any other type, arriving as an echo, is not applied here: the window
// refetches the page instead (window.mjs).
//
// A document is {nodes: Map(id -> node), page}; apply returns a new one
// and never changes its input. Ranks are the keys of the npm package
// fractional-indexing, as spec/README.md section 3 says.

import { generateKeyBetween } from "fractional-indexing";

export const SUPPORTED = new Set(["create-after", "edit-text", "move-node", "indent", "outdent", "delete", "set-cell", "set-outputs", "restore",
  "rename-page", "set-aliases", "merge-page", "restore-page"]);

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const CELL = /^[A-Z]{1,3}[1-9][0-9]{0,5}$/;
const KINDS = new Set(["text", "code", "table"]);

// ---- documents ----

export function parseDoc(json) {
  const nodes = new Map();
  for (const n of json.nodes ?? []) nodes.set(n.id, normalize(n));
  return { nodes, page: { ...json.page } };
}

function normalize(n) {
  const out = { id: n.id, kind: n.kind ?? "text", parent: n.parent ?? null, rank: n.rank, text: n.text ?? "" };
  if (out.kind === "code") out.outputs = (n.outputs ?? []).map((o) => ({ mime: o.mime, data: o.data }));
  if (out.kind === "table") out.cells = { ...(n.cells ?? {}) };
  return out;
}

// docJSON is the canonical form: nodes sorted by id, keys sorted.
export function docJSON(doc) {
  const ids = [...doc.nodes.keys()].sort(bytewise);
  const nodes = ids.map((id) => {
    const n = doc.nodes.get(id);
    const out = {};
    if (n.kind === "table") out.cells = sortKeys(n.cells);
    out.id = n.id;
    out.kind = n.kind;
    if (n.kind === "code") out.outputs = n.outputs.map((o) => ({ data: o.data, mime: o.mime }));
    out.parent = n.parent;
    out.rank = n.rank;
    out.text = n.text;
    return out;
  });
  const p = doc.page;
  return { nodes, page: { aliases: p.aliases ?? [], dir: p.dir ?? "", id: p.id, merged_into: p.merged_into ?? null, title: p.title ?? "" } };
}

function sortKeys(m) {
  const out = {};
  for (const k of Object.keys(m).sort(bytewise)) out[k] = m[k];
  return out;
}

function bytewise(a, b) {
  // Ids, ranks and cell names are ASCII: UTF-16 order is byte order.
  return a < b ? -1 : a > b ? 1 : 0;
}

// children of parent (null = root) in sibling order (rank, id).
function children(doc, parent, except) {
  const out = [];
  for (const n of doc.nodes.values()) if (n.parent === parent && n.id !== except) out.push(n);
  return out.sort((a, b) => bytewise(a.rank, b.rank) || bytewise(a.id, b.id));
}

function nextSibling(doc, n, except) {
  const sibs = children(doc, n.parent, except);
  const i = sibs.findIndex((s) => s.id === n.id);
  return sibs[i + 1] ?? null;
}

function prevSibling(doc, n) {
  const sibs = children(doc, n.parent);
  const i = sibs.findIndex((s) => s.id === n.id);
  return i > 0 ? sibs[i - 1] : null;
}

function isAncestor(doc, anc, id) {
  for (let n = doc.nodes.get(id); n; n = n.parent === null ? null : doc.nodes.get(n.parent)) {
    if (n.id === anc) return true;
  }
  return false;
}

function validKey(k) {
  if (typeof k !== "string" || k === "") return false;
  try {
    generateKeyBetween(k, null); // validates k
    return true;
  } catch {
    return false;
  }
}

// rankBetween: the hint when it is a valid key strictly between the
// neighbours, else generateKeyBetween (spec/README.md, rank hint rule).
function rankBetween(prev, next, hint) {
  const lo = prev?.rank ?? null;
  const hi = next?.rank ?? null;
  if (hint != null && validKey(hint) && (lo === null || lo < hint) && (hi === null || hint < hi)) return hint;
  return generateKeyBetween(lo, hi);
}

// ---- apply ----

class Rejection extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const reject = (code, message) => { throw new Rejection(code, message); };

function str(p, field, optional = false) {
  const v = p[field];
  if (v == null && optional) return null;
  if (typeof v !== "string") reject("invalid-payload", `${field} must be a string`);
  return v;
}

function node(doc, id) {
  const n = doc.nodes.get(id);
  if (!n) reject("node-not-found", `node "${id}" not found`);
  return n;
}

// pageTitle normalizes a title or alias as kbcore does (NFC, runs of
// white space as one space, trimmed) and rejects control characters.
function pageTitle(s, what) {
  const t = s.normalize("NFC").replace(/\s+/gu, " ").trim();
  if (/[\u0000-\u001f\u007f]/u.test(t)) reject("invalid-payload", `${what} ${JSON.stringify(t)} contains a control character`);
  return t;
}

function normalizeAliases(list) {
  if (!Array.isArray(list)) reject("invalid-payload", "aliases must be a list");
  const out = [];
  for (const a of list) {
    if (typeof a !== "string") reject("invalid-payload", "an alias must be a string");
    const t = pageTitle(a, "alias");
    if (t === "") reject("invalid-payload", "an alias is empty");
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

function withNode(doc, n) {
  const nodes = new Map(doc.nodes);
  nodes.set(n.id, n);
  return { nodes, page: doc.page };
}

// moveBack is the inverse of any command that moves n from where it is.
function moveBack(doc, n) {
  const prev = prevSibling(doc, n);
  return { type: "move-node", payload: { node: n.id, parent: n.parent, after: prev ? prev.id : null, rank: n.rank } };
}

// subtree: n and its descendants, depth first, parents first.
function subtree(doc, n) {
  const out = [n];
  for (const c of children(doc, n.id)) out.push(...subtree(doc, c));
  return out;
}

function record(n) {
  const r = { id: n.id, kind: n.kind, parent: n.parent, rank: n.rank, text: n.text };
  if (n.kind === "code") r.outputs = n.outputs.map((o) => ({ mime: o.mime, data: o.data }));
  if (n.kind === "table") r.cells = { ...n.cells };
  return r;
}

function place(doc, n, parent, after, hint) {
  const next = after ? nextSibling(doc, after, n.id) : (children(doc, parent, n.id)[0] ?? null);
  return withNode(doc, { ...n, parent, rank: rankBetween(after, next, hint) });
}

const handlers = {
  "create-after"(doc, cmd, p) {
    const text = str(p, "text");
    const kind = p.kind ?? "text";
    if (!KINDS.has(kind)) reject("invalid-payload", `unknown kind ${kind}`);
    const id = p.node ?? cmd.id;
    if (typeof id !== "string" || !ID.test(id)) reject("invalid-payload", `bad node id ${id}`);
    let parent, prev, next;
    if (p.after != null) {
      const a = doc.nodes.get(p.after);
      if (!a) reject("node-not-found", `after: node "${p.after}" not found`);
      parent = a.parent;
      prev = a;
      next = nextSibling(doc, a);
    } else {
      parent = p.parent ?? null;
      if (parent !== null && !doc.nodes.has(parent)) reject("parent-not-found", `parent "${parent}" not found`);
      prev = null;
      next = children(doc, parent)[0] ?? null;
    }
    if (doc.nodes.has(id)) reject("node-exists", `node "${id}" already exists`);
    if (p.after != null && p.parent != null && p.parent !== parent) reject("anchor-not-sibling", `after is not a child of parent`);
    const n = { id, kind, parent, rank: rankBetween(prev, next, p.rank), text };
    if (kind === "code") n.outputs = [];
    if (kind === "table") n.cells = {};
    return [withNode(doc, n), [{ type: "delete", payload: { node: id } }]];
  },
  "rename-page"(doc, cmd, p) {
    const title = pageTitle(str(p, "title"), "title");
    if (title === "") reject("title-empty", "rename-page: the title is empty");
    const old = doc.page;
    let aliases;
    if (p.aliases != null) aliases = normalizeAliases(p.aliases);
    else aliases = [...new Set([...(old.aliases ?? []), old.title])].filter((a) => a !== title);
    return [{ nodes: doc.nodes, page: { ...old, title, aliases } }, [{ type: "rename-page", payload: { title: old.title, aliases: old.aliases ?? [] } }]];
  },
  "set-aliases"(doc, cmd, p) {
    if (p.aliases == null) reject("invalid-payload", "aliases is missing");
    const aliases = normalizeAliases(p.aliases);
    return [{ nodes: doc.nodes, page: { ...doc.page, aliases } }, [{ type: "set-aliases", payload: { aliases: doc.page.aliases ?? [] } }]];
  },
  "edit-text"(doc, cmd, p) {
    const text = str(p, "text");
    const n = node(doc, str(p, "node"));
    return [withNode(doc, { ...n, text }), [{ type: "edit-text", payload: { node: n.id, text: n.text } }]];
  },
  "move-node"(doc, cmd, p) {
    if (!("parent" in p)) reject("invalid-payload", "parent is missing");
    if (!("after" in p)) reject("invalid-payload", "after is missing");
    const n = node(doc, str(p, "node"));
    const parent = p.parent ?? null;
    if (parent !== null && !doc.nodes.has(parent)) reject("parent-not-found", `parent "${parent}" not found`);
    let after = null;
    if (p.after != null) {
      after = doc.nodes.get(p.after);
      if (!after) reject("node-not-found", `after: node "${p.after}" not found`);
      if (after.parent !== parent || after.id === n.id) reject("anchor-not-sibling", "after is not another child of parent");
    }
    if (parent !== null && isAncestor(doc, n.id, parent)) reject("cycle", "a node cannot move under itself");
    return [place(doc, n, parent, after, p.rank), [moveBack(doc, n)]];
  },
  indent(doc, cmd, p) {
    const n = node(doc, str(p, "node"));
    const prev = prevSibling(doc, n);
    if (!prev) reject("no-previous-sibling", `node "${n.id}" has no previous sibling`);
    const kids = children(doc, prev.id);
    return [place(doc, n, prev.id, kids[kids.length - 1] ?? null, null), [moveBack(doc, n)]];
  },
  outdent(doc, cmd, p) {
    const n = node(doc, str(p, "node"));
    if (n.parent === null) reject("at-root", `node "${n.id}" is at the root`);
    const q = doc.nodes.get(n.parent);
    return [place(doc, n, q.parent, q, null), [moveBack(doc, n)]];
  },
  delete(doc, cmd, p) {
    const n = node(doc, str(p, "node"));
    const sub = subtree(doc, n);
    const nodes = new Map(doc.nodes);
    for (const m of sub) nodes.delete(m.id);
    return [{ nodes, page: doc.page }, [{ type: "restore", payload: { nodes: sub.map(record) } }]];
  },
  "set-outputs"(doc, cmd, p) {
    if (!Array.isArray(p.outputs)) reject("invalid-payload", "outputs must be a list");
    const n = node(doc, str(p, "node"));
    if (n.kind !== "code") reject("not-a-code-cell", `node "${n.id}" is not code`);
    return [withNode(doc, { ...n, outputs: p.outputs.map((o) => ({ mime: o.mime, data: o.data })) }),
      [{ type: "set-outputs", payload: { node: n.id, outputs: n.outputs } }]];
  },
  "set-cell"(doc, cmd, p) {
    const cell = str(p, "cell");
    const value = str(p, "value");
    if (!CELL.test(cell)) reject("invalid-payload", `bad cell name ${cell}`);
    const n = node(doc, str(p, "node"));
    if (n.kind !== "table") reject("not-a-table", `node "${n.id}" is not a table`);
    const cells = { ...n.cells };
    if (value === "") delete cells[cell];
    else cells[cell] = value;
    return [withNode(doc, { ...n, cells }), [{ type: "set-cell", payload: { node: n.id, cell, value: n.cells[cell] ?? "" } }]];
  },
  restore(doc, cmd, p) {
    if (!Array.isArray(p.nodes) || p.nodes.length === 0) reject("invalid-payload", "restore: nodes must hold at least one record");
    const recs = p.nodes.map((r) => {
      if (r === null || typeof r !== "object" || typeof r.id !== "string" || typeof r.rank !== "string" || typeof r.text !== "string") {
        reject("invalid-payload", "restore: a record needs id, rank and text");
      }
      return normalize(r);
    });
    const ids = new Set();
    for (const r of recs) {
      if (doc.nodes.has(r.id) || ids.has(r.id)) reject("node-exists", `node "${r.id}" already exists`);
      ids.add(r.id);
    }
    let d = doc;
    const roots = [];
    for (const r of recs) {
      if (r.parent !== null && !d.nodes.has(r.parent)) reject("parent-not-found", `parent "${r.parent}" not found`);
      if (!ids.has(r.parent)) roots.push(r.id);
      const sibs = children(d, r.parent);
      if (sibs.some((s) => s.rank === r.rank)) {
        const above = sibs.find((s) => s.rank > r.rank);
        r.rank = generateKeyBetween(r.rank, above ? above.rank : null);
      }
      d = withNode(d, r);
    }
    return [d, roots.map((id) => ({ type: "delete", payload: { node: id } }))];
  },
  "merge-page"(doc, cmd, p) {
    const into = str(p, "into");
    if (into === "") reject("invalid-payload", "into is missing");
    if (into === doc.page.id) reject("merge-into-self", `page "${into}" cannot merge into itself`);
    if (doc.page.merged_into) reject("already-merged", `page "${doc.page.id}" was already merged`);
    const records = [];
    for (const root of children(doc, null)) records.push(...subtree(doc, root).map(record));
    return [{ nodes: new Map(), page: { ...doc.page, merged_into: into } },
      [{ type: "restore-page", payload: { page: doc.page.id, nodes: records } }]];
  },
  "restore-page"(doc, cmd, p) {
    if (p.page !== doc.page.id) reject("invalid-payload", `restore-page: payload.page is not this page`);
    if (!Array.isArray(p.nodes)) reject("invalid-payload", "restore-page: nodes must be a list");
    if (!doc.page.merged_into) reject("not-merged", `page "${doc.page.id}" is not merged`);
    const into = doc.page.merged_into;
    let d = { nodes: doc.nodes, page: { ...doc.page, merged_into: null } };
    if (p.nodes.length > 0) [d] = handlers.restore(d, cmd, p);
    return [d, [{ type: "merge-page", payload: { into } }]];
  },
};

// apply returns {doc, inverse} (the commands that revert it, without ids)
// or {rejected: {code, message}}, or {unsupported: true} for a command
// type this client does not implement.
export function apply(doc, cmd) {
  const h = handlers[cmd.type];
  if (!h) return { unsupported: true };
  if (!doc.page.title) return { rejected: { code: "page-not-found", message: "the page is unborn" } };
  if (doc.page.merged_into && cmd.type !== "merge-page" && cmd.type !== "restore-page") return { rejected: { code: "page-merged", message: "the page was merged" } };
  const p = cmd.payload;
  if (p === null || typeof p !== "object" || Array.isArray(p)) return { rejected: { code: "invalid-payload", message: "payload is not an object" } };
  try {
    const [d, inverse] = h(doc, cmd, p);
    return { doc: d, inverse };
  } catch (e) {
    if (e instanceof Rejection) return { rejected: { code: e.code, message: e.message } };
    throw e;
  }
}
