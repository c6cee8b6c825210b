// A skeleton of the client side of the kbkit adapter protocol in
// TypeScript (spec/ADAPTER.md section 7, the client suite), typed with
// spec/types/kbkit.d.ts: the protocol loop, and the one interface your
// client implements, `ClientWindow`. Out of the box it drives the example
// client of examples/client-js (its window.mjs, on @trpc/client v11):
//
//   (cd examples/client-js && npm ci)
//   (cd speckit/adapters/typescript && npm ci && npx tsc -p .)
//   kbkit conformance run --client "node speckit/adapters/typescript/build/client.js" --seeds 20 --faults
//
// To check your own client, replace `openWindow` with a function that
// constructs your real client (its transport, sync engine and store) on
// the URL and token it is given, and list in `intents` what its UI does.
// The kit never sees your sockets: only what your client sends to the URL
// (a fault proxy) and what `state` reports.

import { createInterface } from "node:readline";

import type {
  AdapterReply,
  ClientIntent,
  ClientState,
  CloseOk,
  ErrorReply,
  InitOk,
  IntentOk,
  IntentRequest,
  OpenOk,
  OpenRequest,
  StateOk,
} from "../../../../spec/types/kbkit.js";

/** One window of your client on one page. */
export interface ClientWindow {
  /** Perform a user intent locally (never wait for the server). */
  intent(req: IntentRequest): void;
  /** What the window shows now, and the toasts since the last call. */
  state(): ClientState;
  /** Close the window's sockets. */
  close(): void;
}

/** The intents this client performs: the simulator draws no other. */
const intents: ClientIntent[] = ["create-after", "edit-text", "move-node", "indent", "outdent", "delete", "set-cell", "set-outputs", "undo", "redo"];

// The example client's Window (examples/client-js/window.mjs), loaded at
// run time so that this skeleton compiles without its dependencies.
interface ExampleWindow {
  open(): Promise<void>;
  local(cmd: { id: string; type: string; payload: unknown }): void;
  undo(ids: string[]): void;
  redo(ids: string[]): void;
  state(): ClientState;
  close(): void;
}

/** Open a window of the client: replace with your own client. */
async function openWindow(req: OpenRequest): Promise<ClientWindow> {
  const url = new URL("../../../../examples/client-js/window.mjs", import.meta.url);
  const mod = (await import(url.href)) as { ClientWindow: new (o: object) => ExampleWindow };
  const w = new mod.ClientWindow({ url: req.url, token: req.token, deviceId: req.device_id, pageId: req.page_id,
    log: (m: string) => process.stderr.write(`${req.window}: ${m}\n`) });
  await w.open();
  return {
    intent: (r) => {
      if (r.intent === "undo") w.undo(r.ids ?? []);
      else if (r.intent === "redo") w.redo(r.ids ?? []);
      else w.local({ id: r.id ?? "", type: r.intent, payload: r.payload });
    },
    state: () => w.state(),
    close: () => w.close(),
  };
}

/** Thrown for what this client does not implement: answered with error 10. */
class NotSupported extends Error {}

type Request = { type?: unknown; msg_id?: unknown; [k: string]: unknown };

const windows = new Map<string, ClientWindow>();

function errorReply(id: number | null, code: number, text: string): ErrorReply {
  return { type: "error", in_reply_to: id, code, text };
}

function window(name: unknown): ClientWindow {
  const w = typeof name === "string" ? windows.get(name) : undefined;
  if (!w) throw Object.assign(new Error(`no open window ${JSON.stringify(name)}`), { malformed: true });
  return w;
}

async function handle(msg: Request): Promise<AdapterReply> {
  const id = msg.msg_id as number;
  switch (msg.type) {
    case "init": {
      if (msg.protocol !== 2) return errorReply(id, 10, `protocol ${String(msg.protocol)} is not supported (the client suite is protocol 2)`);
      const ok: InitOk = { type: "init_ok", in_reply_to: id, implementation: "kbkit TypeScript client skeleton", version: "0.1.0", suites: ["client"], intents };
      return ok;
    }
    case "open": {
      const req = msg as unknown as OpenRequest;
      if (windows.has(req.window)) throw Object.assign(new Error(`window ${req.window} is open already`), { malformed: true });
      const w = await openWindow(req);
      windows.set(req.window, w);
      const ok: OpenOk = { type: "open_ok", in_reply_to: id, state: w.state() };
      return ok;
    }
    case "intent": {
      const req = msg as unknown as IntentRequest;
      const w = window(req.window);
      if (!intents.includes(req.intent)) return errorReply(id, 10, `intent ${req.intent} is not implemented`);
      w.intent(req);
      const ok: IntentOk = { type: "intent_ok", in_reply_to: id, state: w.state() };
      return ok;
    }
    case "state": {
      const ok: StateOk = { type: "state_ok", in_reply_to: id, state: window(msg.window).state() };
      return ok;
    }
    case "close": {
      window(msg.window).close();
      windows.delete(msg.window as string);
      const ok: CloseOk = { type: "close_ok", in_reply_to: id };
      return ok;
    }
    default:
      return errorReply(id, 10, `message type ${String(msg.type)} is not supported`);
  }
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  if (!line.trim()) continue;
  let msg: Request;
  try {
    msg = JSON.parse(line) as Request;
  } catch (err) {
    process.stdout.write(JSON.stringify(errorReply(null, 12, `malformed request: ${String(err)}`)) + "\n");
    continue;
  }
  const id = typeof msg.msg_id === "number" ? msg.msg_id : null;
  let reply: AdapterReply;
  try {
    reply = id === null ? errorReply(null, 12, "a request needs a msg_id") : await handle(msg);
  } catch (err) {
    const e = err as Error & { malformed?: boolean };
    reply = errorReply(id, e instanceof NotSupported ? 10 : e.malformed ? 12 : 13, String(e.stack ?? e));
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}
for (const w of windows.values()) w.close();
process.exit(0);
