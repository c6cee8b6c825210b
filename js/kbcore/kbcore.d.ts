// Types of @kbkit/core. The document model, commands, the index and the
// planner's effects are spec/types/kbkit.d.ts of the kbkit repository
// (copied into types/ when the package is packed; never edited here).
import type {
  Command, Dep, Doc, Index, Label, Outcome, PlanEffect, Rank, Ref, Rejection, UUID,
} from "./types/kbkit.js";

export type * from "./types/kbkit.js";

/** A command as any caller may write it; malformed ones are rejected, never thrown. */
export type AnyCommand = Command | { id?: unknown; type?: unknown; payload?: unknown };

export type ApplyResult =
  | { doc: Doc; inverse: { type: string; payload: unknown }[]; index: Index; rejected?: never }
  | { rejected: Rejection; doc?: never; inverse?: never; index?: never };

export type PlanResult =
  | { effects: PlanEffect[]; pages: Record<string, Doc>; rejected?: never }
  | { rejected: Rejection; effects?: never; pages?: never };

/** A document or command may also be passed as its JSON text. */
export function apply(doc: Doc | string, cmd: AnyCommand | string): ApplyResult;
/** apply, answering the canonical JSON text of the result. */
export function applyText(doc: Doc | string, cmd: AnyCommand | string): string;
export function tokenize(text: string): { refs: Ref[]; label: Label | null };
export function tokenizeFormula(formula: string): { refs: Ref[]; deps: Dep[] };
export function index(doc: Doc | string): Index;
export function canonical(doc: Doc | string): Doc;
/** The canonical JSON text of a document: the bytes a server writes (spec/README.md section 1). */
export function canonicalText(doc: Doc | string): string;
/** The canonical JSON text (RFC 8785) of JSON text; throws on invalid JSON, a duplicate key or a lone surrogate. */
export function canonicalJSON(text: string): string;
export function plan(req: { workspace: UUID; pages: Doc[]; page: string; cmd: AnyCommand }): PlanResult;
export function rankBetween(lo: Rank | "" | null, hi: Rank | "" | null): Rank;
export function rankNBetween(lo: Rank | "" | null, hi: Rank | "" | null, n: number): Rank[];

/** "send:<id>", "refetch" or "toast:<code>", in the order the caller must act. */
export type Action = string;

export interface WindowSnapshotState { seq: number; pending: string[]; rendered: Doc; server: Doc }

export class Window {
  constructor(doc: Doc | string, seq?: number);
  local(cmd: AnyCommand): Action[];
  echo(seq: number, cmd: AnyCommand): Action[];
  ack(id: string, seq: number): Action[];
  reject(id: string, code: string): Action[];
  snapshot(doc: Doc | string, seq: number, outcomes?: Record<string, Outcome> | null): Action[];
  undo(ids?: string[]): Action[];
  redo(ids?: string[]): Action[];
  state(): WindowSnapshotState;
  close(): void;
}
