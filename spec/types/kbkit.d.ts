// TypeScript types of the kbkit command model, its wire protocol and its
// adapter protocol, for implementers in TypeScript. Plain data only, no
// imports: trpc.d.ts builds the @trpc/client router type on these.
//
//   spec/README.md   document model, commands, rejection codes, index
//   spec/PROTOCOL.md the wire: procedures, inputs, outputs, errors
//   spec/ADAPTER.md  the adapter protocol (its messages are also JSON
//                    Schemas in spec/schema/adapter/)
//
// `kbkit spec export DIR` writes this file with the rest of the spec.

// ---- document model (spec/README.md section 1) ----

/** A lower-case hyphenated uuid (page, device, workspace and wire command ids). */
export type UUID = string;
/** A node id: 1-64 characters of [A-Za-z0-9_-]. */
export type NodeID = string;
/** A fractional-index key (spec/README.md section 3). */
export type Rank = string;
/** A table cell name such as "B2". */
export type CellName = string;

export type NodeKind = "text" | "code" | "table";

export interface Output {
  mime: string;
  data: string;
}

/** One node of a document in canonical form: every field present. */
export interface DocNode {
  id: NodeID;
  kind: NodeKind;
  /** null: a child of the page root. */
  parent: NodeID | null;
  rank: Rank;
  text: string;
  /** Code nodes only. */
  outputs?: Output[];
  /** Table nodes only: cell name -> value. */
  cells?: Record<CellName, string>;
}

/** The page record. title "" = unborn; merged_into set = merged. */
export interface PageRecord {
  id: UUID;
  title: string;
  aliases: string[];
  dir: string;
  merged_into: UUID | null;
}

/** A page's document in canonical form. */
export interface Doc {
  nodes: DocNode[];
  page: PageRecord;
}

/** A node record as restore and restore-page carry it. */
export interface NodeRecord {
  id: NodeID;
  rank: Rank;
  text: string;
  parent?: NodeID | null;
  kind?: NodeKind;
  outputs?: Output[];
  cells?: Record<CellName, string>;
}

// ---- commands (spec/README.md section 2) ----

/** The payload of each command type (spec/schema/payload/). */
export interface Payloads {
  "create-after": { after?: NodeID | null; parent?: NodeID | null; node?: NodeID | null; text: string; kind?: "text" | "code" | "table" | null; rank?: string | null };
  "edit-text": { node: NodeID; text: string };
  "move-node": { node: NodeID; parent: NodeID | null; after: NodeID | null; rank?: string | null };
  indent: { node: NodeID };
  outdent: { node: NodeID };
  delete: { node: NodeID };
  restore: { nodes: NodeRecord[] };
  "set-outputs": { node: NodeID; outputs: Output[] };
  "set-cell": { node: NodeID; cell: CellName; value: string };
  "create-page": { title: string; dir?: string | null };
  "set-aliases": { aliases: string[] };
  "rename-page": { title: string; aliases?: string[] | null };
  "merge-page": { into: UUID };
  "restore-page": { page: UUID; nodes: NodeRecord[] };
}

export type CommandType = keyof Payloads;

/** A command {id, type, payload}, as logged and echoed. */
export type Command = { [T in CommandType]: { id: string; type: T; payload: Payloads[T] } }[CommandType];

/** A rejection code of the page reducer (spec/README.md section 2.3) or the server (id-reused). */
export type RejectionCode =
  | "invalid-payload" | "unknown-type" | "node-not-found" | "parent-not-found" | "node-exists"
  | "anchor-not-sibling" | "cycle" | "no-previous-sibling" | "at-root" | "not-a-code-cell"
  | "not-a-table" | "page-exists" | "page-not-found" | "page-merged" | "title-empty"
  | "merge-into-self" | "already-merged" | "not-merged" | "rank-exhausted" | "id-reused";

export interface Rejection {
  code: RejectionCode | (string & {});
  message: string;
}

// ---- the index (spec/README.md section 5) ----

export interface Ref {
  kind: "link" | "tag" | "embed";
  title: string;
}

export interface Label {
  key: string;
  text: string;
  number?: number;
}

/** A formula's dependency: a cell of the same table, or a label of a page. */
export type Dep = { cell: string } | { page: string; label: string };

export interface IndexEntry {
  refs?: Ref[];
  label?: Label;
  deps?: { cell: CellName; on: Dep }[];
  cycles?: CellName[];
}

/** A page's index: node id -> entry (nodes that contribute nothing are absent). */
export type Index = Record<NodeID, IndexEntry>;

// ---- the wire (spec/PROTOCOL.md section 4) ----

/** kb.command's input. */
export type CommandEnvelope = {
  [T in CommandType]: { id: UUID; device_id: UUID; page_id: UUID; type: T; payload: Payloads[T] };
}[CommandType];

/** kb.command's output: the command is the page's seq-th; duplicate on a retried id. */
export interface CommandResult {
  seq: number;
  duplicate?: boolean;
}

/** kb.page's input. */
export interface PageInput {
  page_id: UUID;
  /** At most 1000 command ids whose outcomes the caller wants. */
  pending?: UUID[];
}

/** The outcome of a decided id: committed at seq, or rejected. */
export type Outcome = { seq: number; rejected?: never } | { rejected: Rejection; seq?: never };

/** kb.page's output: the document at seq and the outcomes of the pending ids decided on this page. */
export interface PageResult {
  doc: Doc;
  seq: number;
  outcomes: Record<UUID, Outcome>;
}

/** kb.whoami's (and kb.revoke's) output. */
export interface Whoami {
  workspace_id: UUID;
  device_id: UUID;
  /** kb.whoami: the workspace's name, if the server says it (PROTOCOL.md 4.3). */
  workspace?: string;
}

/** kb.onPage's input; lastEventId is the client's seq (the last it applied in order) as a string of decimal digits; null is absent (PROTOCOL.md 4.4). */
export interface OnPageInput {
  page_id: UUID;
  lastEventId?: string | null;
}

/** One kb.onPage event (tracked: its event id is the seq). */
export interface PageEvent {
  seq: number;
  cmd: Command;
}

export type Topic = "directory";

export interface OnInvalidateInput {
  topics?: Topic[];
}

/** One kb.onInvalidate event; page_id and seq are absent when every subscriber should refetch. */
export interface Invalidation {
  topic: Topic;
  page_id?: UUID;
  seq?: number;
}

/** kb.limits' output (spec/PROTOCOL.md sections 4.6 and 8): milliseconds and counts, 0 = no limit. */
export interface Limits {
  max_body: number;
  body_timeout_ms: number;
  idle_timeout_ms: number;
  params_timeout_ms: number;
  write_timeout_ms: number;
  max_connections: number;
  max_subscriptions_per_socket: number;
  max_subscriptions_per_device: number;
  max_batch: number;
  max_socket_queue: number;
  auth_failures_per_minute: number;
  max_inflight: number;
  max_queue: number;
  queue_timeout_ms: number;
  max_title_chars: number;
  max_aliases: number;
  max_pending: number;
  rate_limit_per_second: number;
  /** The rate limit's bucket size (0 without a rate limit). */
  rate_burst: number;
}

/** The tRPC error code names a kbkit server answers (spec/PROTOCOL.md section 6). */
export type ErrorCode =
  | "PARSE_ERROR" | "BAD_REQUEST" | "UNAUTHORIZED" | "FORBIDDEN" | "NOT_FOUND"
  | "METHOD_NOT_SUPPORTED" | "TIMEOUT" | "CONFLICT" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA_TYPE"
  | "TOO_MANY_REQUESTS" | "INTERNAL_SERVER_ERROR" | "SERVICE_UNAVAILABLE";

/** error.data of a kbkit error. */
export interface ErrorData {
  code: ErrorCode;
  httpStatus: number;
  path?: string;
  /** CONFLICT only: the command was decided and rejected. */
  rejection?: Rejection;
  /** The call was not decided and may be repeated as it is. */
  retryable?: boolean;
}

/** The error object of a failed call. */
export interface ErrorShape {
  message: string;
  code: number;
  data: ErrorData;
}

// ---- the adapter protocol (spec/ADAPTER.md; spec/schema/adapter/) ----

export type Suite = "commands" | "tokenizer" | "window" | "planner" | "canonical" | "client";

/** protocol is the version proposed; protocols every version the runner speaks (spec/ADAPTER.md 3, init). */
export interface InitRequest { type: "init"; msg_id: number; protocol: 1 | 2; protocols?: (1 | 2)[] }
export interface InitOk {
  type: "init_ok"; in_reply_to: number;
  implementation: string; version: string; suites: Suite[];
  /** The version the adapter takes, one of init's protocols; absent: init's protocol. */
  protocol?: 1 | 2;
  /** The command types apply handles; absent means all. */
  commands?: CommandType[];
  /** Suite client: the intents the client performs (required with it, not empty). */
  intents?: ClientIntent[];
}

/** cmd is passed exactly as a case writes it: it may be malformed (expect a rejection). */
export interface ApplyRequest { type: "apply"; msg_id: number; doc: Doc; cmd: { id?: unknown; type?: unknown; payload?: unknown } }
export type ApplyOk = { type: "apply_ok"; in_reply_to: number } & (
  | { doc: Doc; inverse: { type: CommandType; payload: unknown }[]; index: Index }
  | { rejected: Rejection }
);

export type TokenizeRequest = { type: "tokenize"; msg_id: number } & ({ text: string } | { formula: string });
export interface TokenizeOk { type: "tokenize_ok"; in_reply_to: number; refs: Ref[]; label: Label | null; deps: Dep[] }

export type WindowEvent =
  | { local: Command }
  | { echo: { seq: number; cmd: Command } }
  | { ack: { id: string; seq: number } }
  | { reject: { id: string; code: string } }
  | { snapshot: { doc: Doc; seq: number; outcomes?: Record<string, { seq?: number; rejected?: { code: string; message?: string } }> } }
  | { undo: { ids: string[] } }
  | { redo: { ids: string[] } };
export interface WindowState { seq: number; pending: string[]; rendered: Doc; server: Doc; actions: string[] }
export interface WindowRequest { type: "window"; msg_id: number; given: { doc: Doc; seq: number }; steps: WindowEvent[] }
export interface WindowOk { type: "window_ok"; in_reply_to: number; states: WindowState[] }

export interface PlanEffect { page: string; cmd: Command; cause?: string }
export interface PlanRequest { type: "plan"; msg_id: number; workspace: UUID; pages: Doc[]; page: string; cmd: { id?: unknown; type?: unknown; payload?: unknown } }
export type PlanOk = { type: "plan_ok"; in_reply_to: number } & (
  | { effects: PlanEffect[]; pages: Record<string, Doc> }
  | { rejected: Rejection }
);

/** Exactly one of doc (nodes in any order) and value (any JSON value); text is the exact canonical text (spec/README.md 1). */
export type CanonicalRequest = { type: "canonical"; msg_id: number } & ({ doc: Doc } | { value: unknown });
export interface CanonicalOk { type: "canonical_ok"; in_reply_to: number; text: string }

/** 10 not supported (skipped), 12 malformed request, 13 crashed (errored). */
export interface ErrorReply { type: "error"; in_reply_to: number | null; code: 10 | 12 | 13 | number; text: string }

// Suite client (spec/ADAPTER.md section 7): a real client, its own
// networking to url (the kit's fault proxy), driven by user intents.
export type ClientIntent =
  | "edit-text" | "create-after" | "move-node" | "indent" | "outdent" | "delete" | "set-cell" | "set-outputs"
  | "rename-page" | "set-aliases" | "merge-page" | "undo" | "redo";
export interface Toast { code: string; id?: string }
export interface ClientState {
  /** The seq of the server document. */
  seq: number;
  /** Own commands not yet settled, in order. */
  pending: string[];
  rendered: Doc;
  /** The server document at seq (optional; checked when given). */
  server?: Doc;
  /** The toasts since the previous reply. */
  toasts: Toast[];
  awaiting?: boolean;
}
/** timeout_ms: how long the runner waits for the reply (absent: 10000). */
export interface OpenRequest { type: "open"; msg_id: number; window: string; url: string; token: string; device_id: UUID; page_id: UUID; timeout_ms?: number }
/** A command intent carries the id the command MUST use and its payload; undo and redo carry ids. */
export interface IntentRequest { type: "intent"; msg_id: number; window: string; intent: ClientIntent; id?: string; payload?: Record<string, unknown>; ids?: string[] }
export interface StateRequest { type: "state"; msg_id: number; window: string }
export interface CloseRequest { type: "close"; msg_id: number; window: string }
export interface OpenOk { type: "open_ok"; in_reply_to: number; state: ClientState }
export interface IntentOk { type: "intent_ok"; in_reply_to: number; state: ClientState }
export interface StateOk { type: "state_ok"; in_reply_to: number; state: ClientState }
export interface CloseOk { type: "close_ok"; in_reply_to: number }

export type AdapterRequest = InitRequest | ApplyRequest | TokenizeRequest | WindowRequest | PlanRequest | CanonicalRequest
  | OpenRequest | IntentRequest | StateRequest | CloseRequest;
export type AdapterReply = InitOk | ApplyOk | TokenizeOk | WindowOk | PlanOk | CanonicalOk | ErrorReply
  | OpenOk | IntentOk | StateOk | CloseOk;
