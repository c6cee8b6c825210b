#!/usr/bin/env node
// Interop check: the unmodified @trpc/client v11 (createTRPCClient with
// httpLink, httpBatchLink and wsLink) against a running `kbkit serve`
// (spec/PROTOCOL.md).
//
//   node check.mjs --url http://127.0.0.1:8080 --token kbk_... [--device-id UUID] [--workspace-id UUID]
//   KBKIT_URL=... KBKIT_TOKEN=... [KBKIT_DEVICE_ID=...] [KBKIT_WORKSPACE_ID=...] node check.mjs
//   node check.mjs --serve-json FILE    (the JSON line `kbkit serve` printed)
//
// The device must be paired already (`kbkit device pair`, or the one
// `kbkit serve` prints). The script creates a page, sends commands (one
// rejected, one retried with the same id), subscribes to kb.onPage and
// checks the echoes arrive in seq order, drops the WebSocket and checks the
// client resubscribes with lastEventId and gets exactly the missed events,
// and checks tRPC error codes (malformed envelope, missing or bad token,
// wrong device, unknown page). Exit status 0 when every check passed, 1
// otherwise (with the failed expectation on stderr).
//
// Node 18+: WebSocket comes from the `ws` package (Node 20 has no global
// WebSocket without a flag), passed to createWSClient.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

import {
  createTRPCClient,
  createWSClient,
  httpBatchLink,
  httpLink,
  splitLink,
  TRPCClientError,
  wsLink,
} from "@trpc/client";
import WebSocket from "ws";

const TIMEOUT_MS = Number(process.env.KBKIT_INTEROP_TIMEOUT_MS || 60000);

// ---- configuration -------------------------------------------------------

function config() {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      token: { type: "string" },
      "device-id": { type: "string" },
      "workspace-id": { type: "string" },
      "serve-json": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log("usage: node check.mjs --url URL --token TOKEN [--device-id UUID] [--workspace-id UUID] | --serve-json FILE\n" +
      "   or: KBKIT_URL=URL KBKIT_TOKEN=TOKEN [KBKIT_DEVICE_ID=UUID] [KBKIT_WORKSPACE_ID=UUID] node check.mjs");
    process.exit(0);
  }
  let fromJSON = {};
  const jsonFile = values["serve-json"] ?? process.env.KBKIT_SERVE_JSON;
  if (jsonFile) {
    const line = readFileSync(jsonFile, "utf8").split("\n").find((l) => l.trim().startsWith("{"));
    if (!line) fatal(`${jsonFile}: no JSON line`);
    fromJSON = JSON.parse(line);
  }
  const url = (values.url ?? process.env.KBKIT_URL ?? fromJSON.url ?? "").replace(/\/+$/, "");
  const token = values.token ?? process.env.KBKIT_TOKEN ?? fromJSON.token;
  const deviceID = values["device-id"] ?? process.env.KBKIT_DEVICE_ID ?? fromJSON.device_id;
  const workspaceID = values["workspace-id"] ?? process.env.KBKIT_WORKSPACE_ID ?? fromJSON.workspace_id;
  if (!url || !token) fatal("need the server URL and a device token (--url/--token, KBKIT_URL/KBKIT_TOKEN or --serve-json)");
  return { url, token, deviceID, workspaceID };
}

// ---- reporting -----------------------------------------------------------

let passed = 0;
let current = "setup";

function fatal(msg) {
  console.error(`interop: FAILED: ${msg}`);
  console.error(`interop: ${passed} passed, 1 failed`);
  process.exit(1);
}

class Expectation extends Error {}

function expect(cond, msg) {
  if (!cond) throw new Expectation(msg);
}

// canon is JSON with object keys sorted, so key order does not matter.
function canon(v) {
  return JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]]))
      : x);
}

function expectEqual(got, want, what) {
  const g = canon(got);
  const w = canon(want);
  if (g !== w) throw new Expectation(`${what}: got ${g}, want ${w}`);
}

async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  await fn();
  passed++;
  console.log(`ok   ${name} (${Date.now() - t0} ms)`);
}

// waitFor polls cond until it is true or ms pass.
async function waitFor(cond, ms, what) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Expectation(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

// expectTRPCError awaits p, which must fail with a TRPCClientError whose
// data.code, data.httpStatus and JSON-RPC shape.code are the given ones.
async function expectTRPCError(p, { code, httpStatus, rpc }, what) {
  let err;
  try {
    const res = await p;
    throw new Expectation(`${what}: succeeded with ${JSON.stringify(res)}, want a ${code} error`);
  } catch (e) {
    if (e instanceof Expectation) throw e;
    err = e;
  }
  expect(err instanceof TRPCClientError, `${what}: threw ${err?.constructor?.name}: ${err?.message}, want a TRPCClientError`);
  expectEqual(err.data?.code, code, `${what}: error.data.code`);
  if (httpStatus !== undefined) expectEqual(err.data?.httpStatus, httpStatus, `${what}: error.data.httpStatus`);
  if (rpc !== undefined) expectEqual(err.shape?.code, rpc, `${what}: error.code (JSON-RPC)`);
  return err;
}

// ---- a WebSocket that records what the client sends and receives ---------

// Every socket the tRPC client opens, in order; each records its traffic.
const sockets = [];

class RecordingWebSocket extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols);
    this.sent = [];
    this.received = [];
    this.closeCode = null;
    sockets.push(this);
    this.addEventListener("message", (ev) => this.received.push(String(ev.data)));
    this.addEventListener("close", (ev) => { this.closeCode = ev.code; });
  }
  send(data, ...rest) {
    this.sent.push(String(data));
    return super.send(data, ...rest);
  }
}

// messagesOf parses the JSON messages (batches flattened) in a list of frames.
function messagesOf(frames) {
  const out = [];
  for (const f of frames) {
    if (f === "PING" || f === "PONG") continue;
    const m = JSON.parse(f);
    out.push(...(Array.isArray(m) ? m : [m]));
  }
  return out;
}

// ---- the checks ----------------------------------------------------------

async function main() {
  const { url, token, deviceID: wantDevice, workspaceID: wantWorkspace } = config();
  const trpcURL = `${url}/trpc`;
  const wsURL = trpcURL.replace(/^http/, "ws");
  const auth = { authorization: `Bearer ${token}` };
  console.log(`interop: @trpc/client against ${url}`);

  // Count HTTP requests, to see that httpBatchLink really batches.
  const httpRequests = [];
  const countingFetch = (input, init) => {
    httpRequests.push(String(input));
    return fetch(input, init);
  };

  const single = createTRPCClient({ links: [httpLink({ url: trpcURL, headers: auth })] });
  const batch = createTRPCClient({ links: [httpBatchLink({ url: trpcURL, headers: auth, fetch: countingFetch })] });

  // The WebSocket client. Its URL is resolved for every connection attempt:
  // closing `gate` holds reconnections back while we commit commands.
  let gate = Promise.resolve();
  let openGate = () => {};
  let opens = 0;
  const wsClient = createWSClient({
    url: async () => {
      await gate;
      return wsURL;
    },
    connectionParams: { token },
    WebSocket: RecordingWebSocket,
    retryDelayMs: () => 50,
    onOpen: () => { opens++; },
  });
  // As in spec/PROTOCOL.md: subscriptions over the WebSocket, the rest
  // batched over HTTP.
  const kb = createTRPCClient({
    links: [splitLink({
      condition: (op) => op.type === "subscription",
      true: wsLink({ client: wsClient }),
      false: httpBatchLink({ url: trpcURL, headers: auth }),
    })],
  });
  // Everything over the WebSocket, queries and mutations included.
  const overWS = createTRPCClient({ links: [wsLink({ client: wsClient })] });

  let me;
  await step("kb.whoami over httpLink, httpBatchLink and wsLink: the paired device", async () => {
    me = await single.kb.whoami.query();
    expect(/^[0-9a-f-]{36}$/.test(me?.device_id ?? "") && /^[0-9a-f-]{36}$/.test(me?.workspace_id ?? ""),
      `kb.whoami answered ${JSON.stringify(me)}`);
    if (wantDevice) expectEqual(me.device_id, wantDevice, "kb.whoami device_id (the paired device)");
    if (wantWorkspace) expectEqual(me.workspace_id, wantWorkspace, "kb.whoami workspace_id");
    expectEqual(await batch.kb.whoami.query(), me, "kb.whoami over httpBatchLink");
    expectEqual(await overWS.kb.whoami.query(), me, "kb.whoami over wsLink");
  });

  const page = randomUUID();
  const env = (type, payload, id = randomUUID()) => ({ id, device_id: me.device_id, page_id: page, type, payload });
  const sent = []; // envelopes committed, in seq order
  const commit = async (client, envelope, wantSeq, what) => {
    const res = await client.kb.command.mutate(envelope);
    expectEqual(res, { seq: wantSeq }, `${what}: kb.command result`);
    sent[wantSeq - 1] = envelope;
  };

  await step("create-page over httpLink commits seq 1", async () => {
    await commit(single, env("create-page", { title: `interop ${page.slice(0, 8)}` }), 1, "create-page");
  });

  await step("two commands in one httpBatchLink request commit in call order", async () => {
    const a = env("create-after", { node: "n1", text: "cash: $610,000" });
    const b = env("create-after", { node: "n2", after: "n1", text: "debt: $0" });
    const before = httpRequests.length;
    const [ra, rb] = await Promise.all([batch.kb.command.mutate(a), batch.kb.command.mutate(b)]);
    expectEqual([ra, rb], [{ seq: 2 }, { seq: 3 }], "batched results");
    const reqs = httpRequests.slice(before);
    expect(reqs.length === 1 && /kb\.command,kb\.command\?batch=1/.test(reqs[0]),
      `want one batched POST /trpc/kb.command,kb.command?batch=1, the client sent ${JSON.stringify(reqs)}`);
    sent[1] = a;
    sent[2] = b;
  });

  await step("a rejected command is CONFLICT 409 with data.rejection, and again on retry", async () => {
    const bad = env("indent", { node: "n1" }); // n1 is a first child
    for (const attempt of ["first", "retry with the same id"]) {
      const err = await expectTRPCError(single.kb.command.mutate(bad),
        { code: "CONFLICT", httpStatus: 409, rpc: -32009 }, `indent of a first child (${attempt})`);
      expectEqual(err.data?.rejection?.code, "no-previous-sibling", `rejection code (${attempt})`);
      expect(typeof err.data?.rejection?.message === "string", `rejection message missing (${attempt})`);
      expectEqual(err.data?.path, "kb.command", `error.data.path (${attempt})`);
    }
  });

  const edit = env("edit-text", { node: "n1", text: "cash: $620,000" });
  await step("a command retried with the same id gets its original seq, marked duplicate", async () => {
    await commit(single, edit, 4, "edit-text");
    expectEqual(await single.kb.command.mutate(edit), { seq: 4, duplicate: true }, "retry over httpLink");
    expectEqual(await batch.kb.command.mutate(edit), { seq: 4, duplicate: true }, "retry over httpBatchLink");
    expectEqual(await overWS.kb.command.mutate(edit), { seq: 4, duplicate: true }, "retry over wsLink");
    const snap = await kb.kb.page.query({ page_id: page, pending: [edit.id] });
    expectEqual(snap.seq, 4, "kb.page seq");
    expectEqual(snap.outcomes?.[edit.id], { seq: 4 }, "kb.page outcome of the retried id");
  });

  // ---- kb.onPage over wsLink ----
  const events = []; // {seq, cmd} in arrival order
  const subErrors = [];
  let started = 0;
  const sub = kb.kb.onPage.subscribe({ page_id: page }, {
    onStarted: () => { started++; },
    onData: (d) => events.push(d),
    onError: (e) => subErrors.push(e),
  });
  const seqs = () => events.map((e) => e.seq);
  const noSubErrors = () => expect(subErrors.length === 0, `kb.onPage error: ${subErrors[0]?.message}`);

  const checkEchoes = (upTo) => {
    expectEqual(seqs(), Array.from({ length: upTo }, (_, i) => i + 1), "kb.onPage seqs (in order, no gaps, no duplicates)");
    for (const e of events) {
      const envl = sent[e.seq - 1];
      expectEqual(e.cmd, { id: envl.id, type: envl.type, payload: envl.payload }, `echo of seq ${e.seq}`);
    }
  };

  await step("kb.onPage over wsLink echoes every committed command in seq order", async () => {
    await waitFor(() => events.length >= 4 || subErrors.length > 0, 10000, "echoes 1..4");
    noSubErrors();
    checkEchoes(4);
    expect(started === 1, `onStarted called ${started} times, want 1`);
    // The wire: tracked events whose result.id is the seq, as the client keeps it.
    const data = messagesOf(sockets.flatMap((s) => s.received)).filter((m) => m.result?.type === "data" && m.result?.data?.cmd);
    expectEqual(data.map((m) => m.result.id), ["1", "2", "3", "4"], "tracked event ids (result.id)");
  });

  await step("a live command reaches the subscriber", async () => {
    await commit(overWS, env("edit-text", { node: "n2", text: "debt: $5" }), 5, "edit-text over wsLink");
    await waitFor(() => events.length >= 5 || subErrors.length > 0, 10000, "echo 5");
    noSubErrors();
    checkEchoes(5);
  });

  await step("after a dropped WebSocket the client resubscribes with lastEventId and gets exactly the missed events", async () => {
    const old = sockets[sockets.length - 1];
    const opensBefore = opens;
    const socketsBefore = sockets.length;
    gate = new Promise((resolve) => { openGate = resolve; });
    old.terminate(); // abrupt: no close frame, as a network cut
    await waitFor(() => old.readyState === WebSocket.CLOSED, 5000, "the socket to close");
    // Commit while the client is disconnected (it cannot reconnect: gate).
    await commit(single, env("create-after", { node: "n3", after: "n2", text: "equity" }), 6, "create-after while disconnected");
    await commit(batch, env("edit-text", { node: "n3", text: "equity: $620,000" }), 7, "edit-text while disconnected");
    await sleep(200);
    expectEqual(seqs().length, 5, "events received while disconnected");
    openGate();
    await waitFor(() => events.length >= 7 || subErrors.length > 0, 10000, "the missed echoes 6 and 7");
    noSubErrors();
    expect(opens > opensBefore && sockets.length > socketsBefore, "the client did not open a new WebSocket");
    await sleep(200); // anything replayed twice would arrive now
    checkEchoes(7);
    // What the client sent on the new socket: the resubscription with the
    // seq of the last event it had.
    const resub = messagesOf(sockets.slice(socketsBefore).flatMap((s) => s.sent))
      .filter((m) => m.method === "subscription" && m.params?.path === "kb.onPage");
    expect(resub.length >= 1, "no kb.onPage subscription was sent on the new socket");
    expectEqual(resub[0].params.lastEventId, "5", "lastEventId sent on resubscription");
    const first = messagesOf(sockets[socketsBefore].sent)[0];
    expectEqual(first?.method, "connectionParams", "first message on the new socket");
  });

  await step("a new subscription with lastEventId in its input starts after it", async () => {
    const later = [];
    const laterErrors = [];
    const s2 = overWS.kb.onPage.subscribe({ page_id: page, lastEventId: "5" }, {
      onData: (d) => later.push(d),
      onError: (e) => laterErrors.push(e),
    });
    await waitFor(() => later.length >= 2 || laterErrors.length > 0, 10000, "events 6 and 7");
    expect(laterErrors.length === 0, `kb.onPage error: ${laterErrors[0]?.message}`);
    await commit(single, env("delete", { node: "n3" }), 8, "delete");
    await waitFor(() => later.length >= 3 && events.length >= 8, 10000, "echo 8 on both subscriptions");
    await sleep(100);
    s2.unsubscribe();
    expectEqual(later.map((e) => e.seq), [6, 7, 8], "seqs after lastEventId 5");
    checkEchoes(8);
  });

  // ---- errors ----
  await step("a malformed envelope is BAD_REQUEST 400 over httpLink, httpBatchLink and wsLink", async () => {
    const malformed = [
      [{ ...env("edit-text", { node: "n1", text: "x" }), extra: 1 }, /extra/],
      [{ ...env("edit-text", { node: "n1", text: 42 }) }, /payload\.text/],
      [{ ...env("edit-text", { node: "n1", text: "x" }), id: "not-a-uuid" }, /^id/],
      [(({ type, ...rest }) => rest)(env("edit-text", { node: "n1", text: "x" })), /type/],
    ];
    for (const [input, field] of malformed) {
      for (const [name, c] of [["httpLink", single], ["httpBatchLink", batch], ["wsLink", overWS]]) {
        const err = await expectTRPCError(c.kb.command.mutate(input),
          { code: "BAD_REQUEST", httpStatus: 400, rpc: -32600 }, `malformed envelope ${JSON.stringify(input)} over ${name}`);
        expect(field.test(err.message), `over ${name}: message ${JSON.stringify(err.message)} does not name the faulty field (${field})`);
      }
    }
    // In one batch with a valid call, only the malformed one fails (207).
    const good = env("edit-text", { node: "n1", text: "cash: $630,000" });
    const [ok, bad] = await Promise.allSettled([
      batch.kb.command.mutate(good),
      batch.kb.command.mutate({ ...good, id: randomUUID(), payload: { node: "n1" } }),
    ]);
    expect(ok.status === "fulfilled", `valid call of a mixed batch failed: ${ok.reason?.message}`);
    expectEqual(ok.value, { seq: 9 }, "valid call of a mixed batch");
    sent[8] = good;
    expect(bad.status === "rejected" && bad.reason?.data?.code === "BAD_REQUEST",
      `malformed call of a mixed batch: ${bad.status} ${bad.reason?.data?.code}`);
    await waitFor(() => events.length >= 9, 10000, "echo 9");
    checkEchoes(9);
  });

  await step("a missing token is UNAUTHORIZED 401 over httpLink and httpBatchLink", async () => {
    const anon = createTRPCClient({ links: [httpLink({ url: trpcURL })] });
    const anonBatch = createTRPCClient({ links: [httpBatchLink({ url: trpcURL })] });
    await expectTRPCError(anon.kb.whoami.query(), { code: "UNAUTHORIZED", httpStatus: 401, rpc: -32001 }, "kb.whoami without a token");
    await expectTRPCError(anon.kb.command.mutate(env("edit-text", { node: "n1", text: "x" })),
      { code: "UNAUTHORIZED", httpStatus: 401, rpc: -32001 }, "kb.command without a token");
    const both = await Promise.allSettled([
      anonBatch.kb.page.query({ page_id: page }),
      anonBatch.kb.whoami.query(),
    ]);
    for (const r of both) {
      expect(r.status === "rejected" && r.reason?.data?.code === "UNAUTHORIZED" && r.reason?.data?.httpStatus === 401,
        `batch without a token: ${r.status} ${JSON.stringify(r.reason?.data ?? r.value)}`);
    }
    const bogus = createTRPCClient({ links: [httpLink({ url: trpcURL, headers: { authorization: "Bearer kbk_not-a-token" } })] });
    await expectTRPCError(bogus.kb.whoami.query(), { code: "UNAUTHORIZED", httpStatus: 401, rpc: -32001 }, "kb.whoami with an unknown token");
  });

  await step("a bad connectionParams token is refused: UNAUTHORIZED, close 1008", async () => {
    const before = sockets.length;
    const badWS = createWSClient({
      url: wsURL,
      connectionParams: { token: "kbk_not-a-token" },
      WebSocket: RecordingWebSocket,
      retryDelayMs: () => 60000,
    });
    const c = createTRPCClient({ links: [wsLink({ client: badWS })] });
    const q = c.kb.whoami.query().then(() => "answered", () => "failed");
    await waitFor(() => sockets.length > before && sockets[before].closeCode !== null, 10000, "the server to close the socket");
    const s = sockets[before];
    const errs = messagesOf(s.received).filter((m) => m.id === null && m.error);
    expect(errs.length === 1, `want one {"id":null,"error":...} message, got ${JSON.stringify(s.received)}`);
    expectEqual(errs[0].error.data?.code, "UNAUTHORIZED", "connectionParams error code");
    expectEqual(s.closeCode, 1008, "close code");
    const never = await Promise.race([q, sleep(100).then(() => "pending")]);
    expect(never !== "answered", "kb.whoami was answered on an unauthenticated socket");
    await badWS.close();
  });

  await step("a foreign device_id is FORBIDDEN 403, a command on an unknown page NOT_FOUND 404", async () => {
    await expectTRPCError(single.kb.command.mutate({ ...env("edit-text", { node: "n1", text: "x" }), device_id: randomUUID() }),
      { code: "FORBIDDEN", httpStatus: 403, rpc: -32003 }, "envelope of another device");
    await expectTRPCError(single.kb.command.mutate({ ...env("edit-text", { node: "n1", text: "x" }), page_id: randomUUID() }),
      { code: "NOT_FOUND", httpStatus: 404, rpc: -32004 }, "edit-text on an unknown page");
    const unknownPage = new Promise((resolve, reject) => {
      const s = overWS.kb.onPage.subscribe({ page_id: randomUUID() }, {
        onData: (d) => { s.unsubscribe(); resolve(d); },
        onError: reject,
      });
    });
    await expectTRPCError(unknownPage, { code: "NOT_FOUND", rpc: -32004 }, "kb.onPage of an unknown page over wsLink");
  });

  await step("nothing was echoed that was not committed", async () => {
    await sleep(200);
    noSubErrors();
    checkEchoes(9);
    const snap = await single.kb.page.query({ page_id: page });
    expectEqual(snap.seq, 9, "kb.page seq at the end");
  });

  sub.unsubscribe();
  await wsClient.close();
}

const timer = setTimeout(() => fatal(`${current}: timed out after ${TIMEOUT_MS} ms`), TIMEOUT_MS);
try {
  await main();
} catch (e) {
  const msg = e instanceof Expectation ? e.message : (e?.stack ?? String(e));
  fatal(`${current}: ${msg}`);
}
clearTimeout(timer);
console.log(`interop: ${passed} passed, 0 failed`);
process.exit(0);
