// The kbkit router as a type for @trpc/client v11 (spec/PROTOCOL.md): no
// server code, only the procedures' inputs, outputs and error shape, so
// that a typed client checks its calls:
//
//   import { createTRPCClient, httpBatchLink } from "@trpc/client";
//   import type { KbkitRouter } from "./trpc.js";
//   const kb = createTRPCClient<KbkitRouter>({ links: [httpBatchLink({ url, headers })] });
//   const { seq } = await kb.kb.command.mutate(envelope);   // CommandEnvelope -> CommandResult
//
// It needs @trpc/server's types (a peer dependency of @trpc/client).

import type {
  TRPCBuiltRouter,
  TRPCMutationProcedure,
  TRPCQueryProcedure,
  TRPCSubscriptionProcedure,
} from "@trpc/server";

import type {
  CommandEnvelope,
  CommandResult,
  ErrorShape,
  Invalidation,
  Limits,
  OnInvalidateInput,
  OnPageInput,
  PageEvent,
  PageInput,
  PageResult,
  Whoami,
} from "./kbkit.js";

export * from "./kbkit.js";

/** The root types: no context or meta a client sees, kbkit's error shape, no transformer. */
export interface KbkitRootTypes {
  ctx: object;
  meta: object;
  errorShape: ErrorShape;
  transformer: false;
}

type Query<I, O> = TRPCQueryProcedure<{ input: I; output: O; meta: object }>;
type Mutation<I, O> = TRPCMutationProcedure<{ input: I; output: O; meta: object }>;
type Subscription<I, O> = TRPCSubscriptionProcedure<{ input: I; output: AsyncIterable<O, void, unknown>; meta: object }>;

/** The procedures of spec/PROTOCOL.md section 4, under `kb`. */
export type KbkitRouter = TRPCBuiltRouter<KbkitRootTypes, {
  kb: {
    /** Decide a command (exactly once per id); a rejection is a CONFLICT error with data.rejection. */
    command: Mutation<CommandEnvelope, CommandResult>;
    /** The page's document at its last seq, and the outcomes of pending ids. */
    page: Query<PageInput, PageResult>;
    /** The authenticated device. */
    whoami: Query<void | Record<string, never>, Whoami>;
    /** The server's limits (spec/PROTOCOL.md 8). */
    limits: Query<void | Record<string, never>, Limits>;
    /** Revoke the calling device's token. */
    revoke: Mutation<void | Record<string, never>, Whoami>;
    /** Every committed command of the page, in seq order (WebSocket only). */
    onPage: Subscription<OnPageInput, PageEvent>;
    /** Hints to refetch non-document surfaces (WebSocket only). */
    onInvalidate: Subscription<OnInvalidateInput | void, Invalidation>;
  };
}>;
