// A typed @trpc/client v11 against kbkit serve, on the router type of
// spec/types/trpc.d.ts. `tsc -p .` checks that the type fits the client
// (the @ts-expect-error lines fail the build if it stops catching wrong
// calls); scripts/ci-interop.sh then runs the compiled build/ file against
// a real server, so the types are checked against the wire too.
//
//   KBKIT_URL=http://127.0.0.1:8080 KBKIT_TOKEN=kbk_... node build/interop/trpc/typed-client.js

import { randomUUID } from "node:crypto";

import { createTRPCClient, createWSClient, httpBatchLink, splitLink, TRPCClientError, wsLink } from "@trpc/client";
import WebSocket from "ws";

import type { CommandEnvelope, KbkitRouter, PageEvent, Rejection } from "../../spec/types/trpc.js";

const url = (process.env.KBKIT_URL ?? "").replace(/\/+$/, "");
const token = process.env.KBKIT_TOKEN ?? "";
if (!url || !token) {
  console.error("typed-client: set KBKIT_URL and KBKIT_TOKEN");
  process.exit(2);
}

const ws = createWSClient({
  url: url.replace(/^http/, "ws") + "/trpc",
  connectionParams: { token },
  WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
});
const kb = createTRPCClient<KbkitRouter>({
  links: [splitLink({
    condition: (op) => op.type === "subscription",
    true: wsLink({ client: ws }),
    false: httpBatchLink({ url: url + "/trpc", headers: { authorization: `Bearer ${token}` } }),
  })],
});

function fail(msg: string): never {
  console.error(`typed-client: FAILED: ${msg}`);
  process.exit(1);
}

// Wrong calls the router type must refuse (never run).
async function refused(page: string, device: string): Promise<void> {
  // @ts-expect-error edit-text needs a text
  await kb.kb.command.mutate({ id: randomUUID(), device_id: device, page_id: page, type: "edit-text", payload: { node: "n1" } });
  // @ts-expect-error no such command type
  await kb.kb.command.mutate({ id: randomUUID(), device_id: device, page_id: page, type: "frobnicate", payload: {} });
  // @ts-expect-error kb.page is a query
  await kb.kb.page.mutate({ page_id: page });
  // @ts-expect-error no such procedure
  await kb.kb.nope.query();
  // @ts-expect-error kb.page's output has no "document"
  (await kb.kb.page.query({ page_id: page })).document;
}
void refused;

async function main(): Promise<void> {
  const me = await kb.kb.whoami.query();
  const page = randomUUID();
  const env = <E extends CommandEnvelope>(e: Omit<E, "id" | "device_id" | "page_id">) =>
    ({ id: randomUUID(), device_id: me.device_id, page_id: page, ...e }) as E;

  const created = await kb.kb.command.mutate(env({ type: "create-page", payload: { title: `typed ${page}` } }));
  if (created.seq !== 1) fail(`create-page seq ${created.seq}, want 1`);

  const events: PageEvent[] = [];
  const sub = kb.kb.onPage.subscribe({ page_id: page }, {
    onData: (e) => { events.push(e); },
    onError: (e) => fail(`kb.onPage: ${e.message}`),
  });

  const node = await kb.kb.command.mutate(env({ type: "create-after", payload: { node: "n1", text: "cash: $5" } }));
  if (node.seq !== 2) fail(`create-after seq ${node.seq}, want 2`);

  let rejection: Rejection | undefined;
  try {
    await kb.kb.command.mutate(env({ type: "indent", payload: { node: "n1" } }));
  } catch (e) {
    if (!(e instanceof TRPCClientError)) throw e;
    const err = e as TRPCClientError<KbkitRouter>;
    if (err.data?.code !== "CONFLICT") fail(`indent: ${err.data?.code}, want CONFLICT`);
    rejection = err.data?.rejection;
  }
  if (rejection?.code !== "no-previous-sibling") fail(`indent rejection ${JSON.stringify(rejection)}`);

  const snap = await kb.kb.page.query({ page_id: page });
  const n1 = snap.doc.nodes.find((n) => n.id === "n1");
  if (snap.seq !== 2 || n1?.text !== "cash: $5" || snap.doc.page.title !== `typed ${page}`) {
    fail(`kb.page: ${JSON.stringify(snap)}`);
  }

  const limits = await kb.kb.limits.query();
  if (!(limits.max_pending > 0 && limits.body_timeout_ms > 0)) fail(`kb.limits: ${JSON.stringify(limits)}`);

  const deadline = Date.now() + 10000;
  while (events.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const seqs = events.map((e) => e.seq).join(",");
  if (seqs !== "1,2" || events[1].cmd.type !== "create-after" || events[1].cmd.payload.text !== "cash: $5") {
    fail(`kb.onPage events ${JSON.stringify(events)}`);
  }
  sub.unsubscribe();
  await ws.close();
  console.log("typed-client: 6 passed, 0 failed");
}

main().catch((e) => fail(e instanceof Error ? e.stack ?? e.message : String(e)));
