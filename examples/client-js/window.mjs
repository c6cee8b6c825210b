// A Window of spec/window.md in JavaScript, with its own transport: the
// unmodified @trpc/client v11 (httpLink for kb.command and kb.page, wsLink
// for kb.onPage, which resumes with lastEventId after a reconnect).
//
// State: server (the server's document at seq), seq, pending (own
// commands not yet settled, in order), rendered = fold(server, pending),
// awaiting (a gap was seen, a snapshot is awaited). The transport sends
// pending commands one at a time, in order, each once the previous one is
// decided, and resends with the same id until the server decides; it
// repeats a refetch until a snapshot at or above seq arrives.
//
// `broken` names one deliberate bug (adapter.mjs --broken), so that the
// kit can show it catches each: see BROKEN.

import { randomUUID } from "node:crypto";

import { createTRPCClient, createWSClient, httpLink, splitLink, wsLink } from "@trpc/client";
import WebSocket from "ws";

import { apply, docJSON, parseDoc } from "./reducer.mjs";

export const BROKEN = {
  "new-id-on-retry": "mints a new id when it resends a command",
  "no-refetch": "never refetches on a seq gap: applies the later echo anyway",
  "keep-rejected": "keeps a rejected command pending and rendered",
  "drop-pending-on-reconnect": "forgets its pending commands when the socket reconnects",
  "resume-from-zero": "resubscribes without lastEventId after a reconnect and applies old events again",
  "echo-on-top": "applies every echo on top of what it renders, its own echoes too, instead of rebasing",
  "duplicate-twice": "applies a duplicated event a second time, as the next seq (it counts events)",
  "out-of-order": "applies an echo past a gap at once, and the missing ones as they come, in arrival order",
  "give-up": "drops a command from pending after two failed sends, with no toast",
  "no-local-toast": "shows no toast when its reducer rejects an intent",
  "send-local-rejections": "keeps an intent its reducer rejects pending and sends it",
  "resubscribe-wrong-seq": "resubscribes after a reconnect with lastEventId one past its seq",
  "no-server-doc": "reports no server document, and applies others' echoes on top of what it renders",
  "resend-refused": "takes a refused post (400) for an undecided one and resends it, forever pending",
  "resubscribe-past-gap": "on a seq gap, subscribes again with the last seq it received, past the hole",
  "no-echo-timer": "never notices an acknowledged command's echo is overdue: waits for a later event that never comes",
  "toast-wrong-id": "toasts a server rejection with the id of another command",
  "undo-toast-id": "names the undo's first id in a toast of its checks (nothing-to-undo, missing-ids, duplicate-id)",
  // The zoo (kbkit selftest): a published anomaly of a real sync engine.
  "revert-pending-on-refetch": "renders a refetched snapshot alone, its pending commands left out until the next echo (PowerSync's local changes reverted)",
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ECHO_WAIT_MS bounds the wait for the echo of an acknowledged command.
const ECHO_WAIT_MS = 2000;

export class ClientWindow {
  constructor({ url, token, deviceId, pageId, broken, log }) {
    this.url = url.replace(/\/+$/, "");
    this.token = token;
    this.deviceId = deviceId;
    this.pageId = pageId;
    this.broken = broken ?? "";
    this.log = log ?? (() => {});
    this.server = null;
    this.rendered = null;
    this.seq = 0;
    this.pending = []; // commands {id, type, payload}
    this.acked = new Set(); // pending ids the server committed (the echo is owed)
    this.buffer = new Map(); // seq -> cmd: events past a gap, kept for after the snapshot
    this.awaiting = false;
    this.toasts = [];
    this.closed = false;
    this.sending = false;
    this.refetching = false;
    this.opens = 0;
    this.undoStack = []; // entries {ids, cmds}: the commands that revert one step
    this.redoStack = [];
    this.reverts = new Map(); // pending undo/redo command id -> the ids it reverts
    this.missing = new Set(); // --broken out-of-order: seqs skipped, applied when they come
  }

  // open resolves once the snapshot is shown and the subscription asked
  // for (not yet started: it resumes after the snapshot's seq, so nothing
  // is missed); kb.page is retried with backoff for half of timeoutMs, the
  // time the runner waits, then open fails (spec/ADAPTER.md section 7).
  async open(timeoutMs = 10000) {
    const trpcURL = `${this.url}/trpc`;
    const headers = { authorization: `Bearer ${this.token}` };
    this.ws = createWSClient({
      url: trpcURL.replace(/^http/, "ws"),
      connectionParams: { token: this.token },
      WebSocket,
      retryDelayMs: (attempt) => Math.min(20 * 2 ** attempt, 500),
      onOpen: () => {
        this.opens++;
        if (this.opens > 1) this.reconnected();
      },
    });
    this.trpc = createTRPCClient({
      links: [splitLink({
        condition: (op) => op.type === "subscription",
        true: wsLink({ client: this.ws }),
        false: httpLink({ url: trpcURL, headers }),
      })],
    });
    const snap = await this.retry(() => this.trpc.kb.page.query({ page_id: this.pageId }), Date.now() + timeoutMs / 2);
    this.server = parseDoc(snap.doc);
    this.seq = snap.seq;
    this.rebase();
    this.subscribe(String(this.seq));
  }

  subscribe(lastEventId) {
    this.sub?.unsubscribe();
    const input = { page_id: this.pageId };
    if (lastEventId !== undefined) input.lastEventId = lastEventId;
    this.sub = this.trpc.kb.onPage.subscribe(input, {
      onData: (ev) => this.echo(ev.seq, ev.cmd),
      onError: (err) => {
        // A subscription that ended with an error: subscribe again after
        // the last seq this window has.
        this.log(`kb.onPage: ${err.message}`);
        if (!this.closed) setTimeout(() => this.subscribe(String(this.seq)), 50);
      },
    });
  }

  // reconnected: wsLink resubscribes by itself with the last event id it
  // received.
  reconnected() {
    if (this.broken === "drop-pending-on-reconnect") {
      this.pending = [];
      this.acked.clear();
      this.rebase();
    }
    if (this.broken === "resume-from-zero") this.subscribe(undefined);
    if (this.broken === "resubscribe-wrong-seq") this.subscribe(String(this.seq + 1));
  }

  close() {
    this.closed = true;
    this.sub?.unsubscribe();
    this.ws?.close();
  }

  // ---- events (spec/window.md) ----

  local(cmd) {
    if (this.issue([cmd], null)) this.redoStack = []; // a new edit ends the redo history
  }

  // issue applies commands to rendered one by one, stopping at the first
  // rejection, and records how to revert the accepted ones (on stack, or
  // the undo stack). It reports whether the last one was accepted.
  issue(cmds, stack) {
    let revert = [];
    const ids = [];
    let ok = true;
    for (const c of cmds) {
      if (this.pending.some((p) => p.id === c.id)) {
        this.toast("duplicate-id", c.id);
        ok = false;
        break;
      }
      const r = apply(this.rendered, c);
      if (!r.doc && this.broken === "send-local-rejections" && r.rejected) {
        this.pending.push(c); // the bug: sent for the server to reject
        ids.push(c.id);
        continue;
      }
      if (!r.doc) {
        if (this.broken !== "no-local-toast") this.toast(r.rejected ? r.rejected.code : "not-supported", c.id);
        ok = false;
        break;
      }
      this.rendered = r.doc;
      this.pending.push(c);
      revert = [...r.inverse, ...revert];
      ids.push(c.id);
    }
    if (revert.length > 0) (stack ?? this.undoStack).push({ ids, cmds: revert });
    this.pump();
    return ok;
  }

  undo(ids) {
    this.step(this.undoStack, this.redoStack, ids, "nothing-to-undo");
  }

  redo(ids) {
    this.step(this.redoStack, this.undoStack, ids, "nothing-to-redo");
  }

  step(from, to, ids, empty) {
    // The checks' toasts name no command (spec/window.md); the bug names one.
    const named = this.broken === "undo-toast-id" ? ids[0] : undefined;
    if (from.length === 0) return this.toast(empty, named);
    const e = from[from.length - 1];
    if (ids.length < e.cmds.length) return this.toast("missing-ids", named);
    const use = ids.slice(0, e.cmds.length);
    if (use.some((id, i) => this.pending.some((p) => p.id === id) || use.indexOf(id) !== i)) return this.toast("duplicate-id", named);
    from.pop();
    const cmds = e.cmds.map((c, i) => ({ id: use[i], type: c.type, payload: c.payload }));
    this.issue(cmds, to);
    for (const c of cmds) if (this.pending.some((p) => p.id === c.id)) this.reverts.set(c.id, e.ids);
  }

  // forget removes the undo and redo entries made from command id.
  forget(id) {
    this.undoStack = this.undoStack.filter((e) => !e.ids.includes(id));
    this.redoStack = this.redoStack.filter((e) => !e.ids.includes(id));
  }

  // dropReverting drops the pending undo/redo commands that revert a
  // rejected command (and what reverts those, in turn): they were not
  // sent yet (commands go one at a time, in order).
  dropReverting(rejected) {
    for (let changed = true; changed;) {
      changed = false;
      this.pending = this.pending.filter((c) => {
        if (!(this.reverts.get(c.id) ?? []).some((id) => rejected.has(id))) return true;
        rejected.add(c.id);
        this.forget(c.id);
        this.reverts.delete(c.id);
        this.acked.delete(c.id);
        changed = true;
        return false;
      });
    }
  }

  echo(seq, cmd) {
    if (this.closed) return;
    if (this.broken === "out-of-order") {
      if (seq <= this.seq && !this.missing.delete(seq)) return;
      for (let s = this.seq + 1; s < seq; s++) this.missing.add(s);
    } else if (seq <= this.seq && this.broken === "duplicate-twice" && seq === this.seq) {
      // The bug: it counts events instead of reading their seq, so a
      // duplicate is applied again as the next one.
      const r = apply(this.server, cmd);
      if (r.doc) this.server = r.doc;
      this.seq++;
      this.rebase();
      return;
    } else if (seq <= this.seq && this.broken !== "resume-from-zero") {
      return; // a duplicate
    }
    if (seq > this.seq + 1 && this.broken !== "no-refetch" && this.broken !== "out-of-order") {
      this.buffer.set(seq, cmd);
      // wsLink would resume from this event after a reconnect, past the
      // hole: subscribe again after the window's seq (spec/window.md).
      this.subscribe(String(this.broken === "resubscribe-past-gap" ? seq : this.seq));
      if (!this.awaiting) {
        this.awaiting = true;
        this.refetch();
      }
      return;
    }
    const r = apply(this.server, cmd);
    if (r.unsupported) {
      // A command this client's reducer does not implement: the snapshot
      // brings it.
      this.awaiting = true;
      this.refetch();
      return;
    }
    if (r.doc) this.server = r.doc;
    this.seq = Math.max(this.seq, seq);
    const own = this.pending.findIndex((c) => c.id === cmd.id);
    if (own >= 0) {
      this.pending.splice(own, 1);
      this.acked.delete(cmd.id);
    }
    if (this.broken === "echo-on-top" || (this.broken === "no-server-doc" && own < 0)) {
      const t = apply(this.rendered, cmd);
      if (t.doc) this.rendered = t.doc;
    } else {
      this.rebase();
    }
    this.drainBuffer();
  }

  drainBuffer() {
    for (const s of [...this.buffer.keys()].sort((a, b) => a - b)) {
      if (s <= this.seq) this.buffer.delete(s);
    }
    const next = this.buffer.get(this.seq + 1);
    if (next) {
      this.buffer.delete(this.seq + 1);
      this.echo(this.seq + 1, next);
    }
  }

  reject(id, code) {
    const i = this.pending.findIndex((c) => c.id === id);
    if (i < 0) return;
    this.toast(code, this.broken === "toast-wrong-id" ? randomUUID() : id);
    if (this.broken === "keep-rejected") {
      this.acked.add(id); // never sent again, never dropped
      return;
    }
    this.pending.splice(i, 1);
    this.acked.delete(id);
    this.forget(id);
    this.dropReverting(new Set([id]));
    this.rebase();
  }

  snapshot(snap) {
    if (snap.seq < this.seq) return false;
    this.server = parseDoc(snap.doc);
    this.seq = snap.seq;
    this.awaiting = false;
    // Outcomes first, in pending order (a rejected undo is toasted even
    // when the command it reverts is rejected too); then the undecided
    // undos of rejected commands are dropped (spec/window.md, snapshot).
    const rejected = new Set();
    for (const c of [...this.pending]) {
      const o = snap.outcomes?.[c.id];
      if (o?.rejected && this.broken === "keep-rejected") this.reject(c.id, o.rejected.code);
      else if (o?.rejected) {
        this.toast(o.rejected.code, this.broken === "toast-wrong-id" ? randomUUID() : c.id);
        this.pending = this.pending.filter((p) => p.id !== c.id);
        this.acked.delete(c.id);
        this.forget(c.id);
        rejected.add(c.id);
      } else if (o && o.seq >= 1 && o.seq <= snap.seq) {
        this.pending = this.pending.filter((p) => p.id !== c.id);
        this.acked.delete(c.id);
      }
    }
    this.dropReverting(rejected);
    // Every command still pending is sent again (the server deduplicates).
    for (const c of this.pending) if (this.broken !== "keep-rejected") this.acked.delete(c.id);
    if (this.broken === "revert-pending-on-refetch") this.rendered = this.server;
    else this.rebase();
    this.drainBuffer();
    if (this.buffer.size > 0) {
      // Events past a hole the snapshot does not reach: still a gap.
      this.awaiting = true;
      queueMicrotask(() => this.refetch());
    }
    this.pump();
    return true;
  }

  rebase() {
    let d = this.server;
    for (const c of this.pending) {
      const r = apply(d, c);
      if (r.doc) d = r.doc;
    }
    this.rendered = d;
  }

  toast(code, id) {
    this.toasts.push({ code, id });
  }

  state() {
    const toasts = this.toasts;
    this.toasts = [];
    return {
      seq: this.seq,
      pending: this.pending.map((c) => c.id),
      rendered: docJSON(this.rendered),
      server: this.broken === "no-server-doc" ? undefined : docJSON(this.server),
      toasts,
      awaiting: this.awaiting,
    };
  }

  // ---- transport ----

  // pump sends the first pending command not yet committed, one at a
  // time, until none is left.
  async pump() {
    if (this.sending) return;
    this.sending = true;
    try {
      for (;;) {
        if (this.closed) return;
        const c = this.pending.find((p) => !this.acked.has(p.id));
        if (!c) return;
        await this.send(c);
      }
    } finally {
      this.sending = false;
    }
  }

  async send(c) {
    for (let attempt = 0; !this.closed; attempt++) {
      if (!this.pending.includes(c)) return; // settled meanwhile (an echo or a snapshot)
      const env = { id: c.id, device_id: this.deviceId, page_id: this.pageId, type: c.type, payload: c.payload };
      try {
        const res = await this.trpc.kb.command.mutate(env);
        if (!this.pending.includes(c)) return;
        if (res.seq <= this.seq) {
          // Committed at or below the window's seq (a snapshot brought it
          // without an outcome: it was sent after the refetch asked): it
          // is in the server document already.
          this.pending.splice(this.pending.indexOf(c), 1);
          this.acked.delete(c.id);
          this.rebase();
          return;
        }
        this.acked.add(c.id); // committed at res.seq: pending until its echo
        this.awaitEcho(res.seq);
        return;
      } catch (err) {
        const rej = err?.data?.rejection ?? err?.shape?.data?.rejection;
        if (rej) {
          this.reject(c.id, rej.code);
          return;
        }
        const status = err?.data?.httpStatus ?? err?.shape?.data?.httpStatus;
        if (status >= 400 && status < 500 && ![408, 409, 429].includes(status) && this.broken !== "resend-refused") {
          // Refused (spec/window.md): final, nothing logged; no resend.
          this.log(`kb.command ${c.id.slice(0, 8)}: ${err.message}; refused`);
          this.reject(c.id, "refused");
          return;
        }
        // Not decided (a lost answer, a 5xx, a restarting instance):
        // resend the same envelope.
        if (this.broken === "give-up" && attempt >= 1) {
          // The bug: the edit is dropped silently after two failed sends.
          const i = this.pending.indexOf(c);
          if (i >= 0) this.pending.splice(i, 1);
          this.rebase();
          return;
        }
        this.log(`kb.command ${c.id.slice(0, 8)}: ${err.message}; resending`);
        if (this.broken === "new-id-on-retry") {
          // The bug: the failed command is issued again as a new one.
          const fresh = { ...c, id: randomUUID() };
          const i = this.pending.indexOf(c);
          if (i >= 0) this.pending[i] = fresh;
          else this.pending.push(fresh);
          c = fresh;
        }
        await sleep(Math.min(10 * 2 ** attempt, 300));
      }
    }
  }

  // awaitEcho: the echo of a command committed at seq is owed; if the
  // window's seq is still below it ECHO_WAIT_MS later, the event was lost
  // (a live subscription has no gaps) and the window resubscribes after
  // its seq (spec/window.md).
  awaitEcho(seq) {
    if (this.broken === "no-echo-timer") return;
    setTimeout(() => {
      if (this.closed || this.seq >= seq) return;
      this.log(`echo of seq ${seq} overdue at seq ${this.seq}; resubscribing`);
      this.subscribe(String(this.seq));
    }, ECHO_WAIT_MS).unref?.();
  }

  // refetch asks for the page with the pending ids until a snapshot at or
  // above seq arrives.
  async refetch() {
    if (this.refetching) return;
    this.refetching = true;
    try {
      while (this.awaiting && !this.closed) {
        const ids = this.pending.map((c) => c.id);
        try {
          const snap = await this.trpc.kb.page.query({ page_id: this.pageId, pending: ids });
          if (this.snapshot(snap)) {
            // wsLink would resume from the last event it received, which
            // the snapshot may have passed: resubscribe after the window's
            // seq (spec/window.md).
            this.subscribe(String(this.seq));
            break;
          }
        } catch (err) {
          this.log(`kb.page: ${err.message}; again`);
          await sleep(30);
        }
      }
    } finally {
      this.refetching = false;
    }
    if (this.awaiting) this.refetch();
  }

  // retry calls fn until it succeeds, with backoff; past deadline (a
  // Date.now() value, optional) it gives up with fn's last error.
  async retry(fn, deadline = Infinity) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const left = deadline - Date.now();
        if (this.closed || attempt > 100 || left <= 0) throw err;
        await sleep(Math.min(10 * 2 ** attempt, 300, left));
      }
    }
  }
}
