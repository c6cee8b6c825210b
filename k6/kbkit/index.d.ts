/**
 * Types of k6/x/kbkit, kbkit's k6 extension (the Go binding in this
 * directory: module.go, run.go, window.go, workloads.go, finish.go).
 * Every VU holds real windows of kbkit's measured editor (loadgen/editor):
 * a command is applied locally, sent, and sent again with the same id until
 * the server decides it (spec/window.md); its echoes are applied on the
 * window's own goroutine.
 *
 *   import kbkit from 'k6/x/kbkit';
 *   export function setup() { return kbkit.setup({ url: __ENV.KBKIT_URL, token: __ENV.KBKIT_TOKEN, workload: 'hot-page' }); }
 *   export default function (data) { kbkit.workloads.hotPage(kbkit.editor(data)); }
 *   export function teardown(data) { kbkit.finish(data, { json: __ENV.KBKIT_JSON }); }
 *
 * Options objects refuse unknown keys: a misspelt option throws.
 */
declare module 'k6/x/kbkit' {
  /** A server: the url and a device token of `kbkit serve`'s JSON line. */
  export interface ServerOptions {
    /** http://HOST:PORT */
    url: string;
    /** a device token, kbk_... */
    token: string;
  }

  /** What a command call returns. Exactly one of seq (committed),
   * rejected, refused and error is set. */
  export interface CommandResult {
    /** the command's type (edit-text, create-after, ...); "" for an undo
     * or redo the window refused */
    type: string;
    /** the command's id */
    id: string;
    committed: boolean;
    /** the seq the command committed at */
    seq?: number;
    /** the server's rejection code */
    rejected?: string;
    /** the window's refusal: the reducer's code (the command does not
     * apply to the rendered page), duplicate-id, not-pending, or a toast
     * such as nothing-to-undo */
    refused?: string;
    /** the command was not decided (network, timeout, ...) */
    error?: string;
  }

  /** createAfter's result: node is the new node's id (= id). */
  export interface CreateResult extends CommandResult {
    node: string;
  }

  /** Window.type's counts of its keystrokes' outcomes. */
  export interface TypeResult {
    keystrokes: number;
    committed: number;
    rejected: number;
    refused: number;
    errors: number;
  }

  /** A duration: milliseconds, or a string such as "5s". */
  export type Duration = number | string;

  /** One open page of this VU. Each command is posted and waited for. */
  export interface Window {
    /** one edit-text per character of text, appended to node's text, each
     * committed before the next */
    type(node: string, text: string): TypeResult;
    /** replaces node's text (one edit-text) */
    setText(node: string, text: string): CommandResult;
    /** creates a node with text after node after (null: first on the page) */
    createAfter(after: string | null, text: string): CreateResult;
    /** moves node under parent (null: the page) after sibling after
     * (null: first) */
    move(node: string, parent: string | null, after: string | null): CommandResult;
    /** makes node the last child of its previous sibling (Tab) */
    indent(node: string): CommandResult;
    /** moves node after its parent (Shift-Tab) */
    outdent(node: string): CommandResult;
    /** deletes node and its subtree */
    delete(node: string): CommandResult;
    /** reverts the window's last own step (new commands, sent in order;
     * the result is the last one's) */
    undo(): CommandResult;
    /** reverts the window's last undo */
    redo(): CommandResult;
    /** waits until the window has applied every command its page is known
     * (in this process) to have, with nothing pending, records
     * kbkit_convergence and returns the wait in ms; throws past timeout
     * (default 10 s), counting a not-converged error */
    waitConverged(timeout?: Duration): number;
    /** closes the window's subscription */
    close(): void;
    /** the ids of the rendered page's nodes, in document order */
    nodes(): string[];
    /** node's rendered text ("" when there is no such node) */
    text(node: string): string;
    /** the seq of the last event the window applied */
    seq(): number;
    /** the id of the window's page */
    page(): string;
  }

  /** A VU's editor of a run: its windows as the plan lays them out. */
  export interface Editor {
    /** exec.vu.idInTest − 1 (with pagesBySegment: its place segment by segment) */
    readonly index: number;
    readonly windows: Window[];
  }

  /** kbkit loadgen's workload names. */
  export type WorkloadName = 'hot-page' | 'many-pages' | 'outline' | 'rename-storm' | 'typing';

  /** setup's options: the run's layout, the same in every process. */
  export interface SetupOptions extends ServerOptions {
    /** default hot-page */
    workload?: WorkloadName;
    /** default: the most VUs the whole test may run */
    editors?: number;
    /** required with --execution-segment (the same in every process) */
    runId?: string;
    /** lay the editors out segment by segment: every page's windows in one process (each segment's editors whole pages) */
    pagesBySegment?: boolean;
    /** the workload's mix overridden, e.g. "edit=90,create=10" */
    mix?: string;
    pages?: number;
    windowsPerPage?: number;
    /** seed nodes per page */
    nodes?: number;
    /** keystrokes per typing burst */
    burst?: number;
    /** seeds the editors' random sources */
    seed?: number;
    /** device tokens to spread the editors over */
    tokens?: string[];
    /** with devices: pair that many devices in this database */
    dsn?: string;
    devices?: number;
    /** the workspace to pair devices in (default dev) */
    workspace?: string;
  }

  /** What setup returns: pass it to editor and finish. */
  export interface RunData extends ServerOptions {
    workload: string;
    mix?: string;
    pages?: number;
    windowsPerPage?: number;
    nodes?: number;
    burst?: number;
    editors?: number;
    runId?: string;
    seed?: number;
    tokens?: string[];
    pagesBySegment?: boolean;
    /** this process's execution segment */
    segment?: string;
  }

  export interface FinishOptions {
    /** how long the windows may take to converge (default 15 s) */
    timeout?: Duration;
    /** writes kbkit's JSON result there (kbkit loadgen report reads it); {segment} is replaced by the process's execution segment (0-1_2 for 0:1/2) */
    json?: string;
  }

  export interface FinishResult {
    windows: number;
    diverged: number;
    notConverged: number;
    committed: number;
    cpuSeconds: number;
    /** the file written, if json was given */
    json?: string;
  }

  export interface WorkloadOptions {
    /** the workload's mix overridden, e.g. "edit=90,create=10" */
    mix?: string;
    burst?: number;
  }

  /** One operation of a workload on one of the editor's windows (drawn at
   * random) or on a window. */
  export type Workload = (target: Editor | Window, opts?: WorkloadOptions) => CommandResult;

  export interface Workloads {
    hotPage: Workload;
    manyPages: Workload;
    outline: Workload;
    renameStorm: Workload;
    typing: Workload;
  }

  /** Opens a window of this VU on any page. */
  export function openWindow(opts: ServerOptions & { page: string }): Window;
  /** Creates a page with nodes s0, s1, ... (default 5, at most 10000). */
  export function createPage(opts: ServerOptions & { nodes?: number }): { id: string; title: string; nodes: string[] };
  /** Pairs count devices of workspace (default dev) in the server's
   * database; returns their tokens. */
  export function pair(opts: { dsn: string; workspace?: string; count: number }): string[];
  /** Lays out the run and creates this process's pages (in setup()). */
  export function setup(opts: SetupOptions): RunData;
  /** This VU's editor, its windows opened on the first call. */
  export function editor(data: RunData): Editor;
  /** Ends the load in this process (in teardown(data)): convergence,
   * divergence, kbkit's JSON result. */
  export function finish(data?: RunData | null, opts?: FinishOptions): FinishResult;
  export const workloads: Workloads;

  const kbkit: {
    openWindow: typeof openWindow;
    createPage: typeof createPage;
    pair: typeof pair;
    setup: typeof setup;
    editor: typeof editor;
    finish: typeof finish;
    workloads: Workloads;
  };
  export default kbkit;
}
