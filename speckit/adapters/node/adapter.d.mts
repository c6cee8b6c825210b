// Types of the functions adapter.mjs exports, for adapters written in
// TypeScript that reuse them (../typescript/src/adapter.ts).
import type { Dep, Doc, Index, Label, Ref } from "../../../spec/types/kbkit.js";

export function tokenize(text: string): { refs: Ref[]; label: Label | null };
export function tokenizeFormula(formula: string): { refs: Ref[]; deps: Dep[] };
export function indexDoc(doc: Doc): Index;
