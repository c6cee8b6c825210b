#!/usr/bin/env node
// A deliberately broken adapter, used by kbkit's own tests to prove that a
// wrong implementation fails the run (exit 1) with the failing case ids in
// the TAP and JUnit reports. It is the example Node adapter with one bug:
// edit-text stores the new text without its last character whenever the
// text is longer than three characters.
import { serve } from "../node/adapter.mjs";

serve((reply, req) => {
  if (reply.type === "init_ok") return { ...reply, implementation: "kbkit-broken-example" };
  if (reply.type === "apply_ok" && reply.doc && req.cmd.type === "edit-text") {
    const text = req.cmd.payload.text;
    if (text.length > 3) {
      reply.doc.nodes = reply.doc.nodes.map((n) =>
        n.id === req.cmd.payload.node ? { ...n, text: text.slice(0, -1) } : n);
    }
  }
  return reply;
});
