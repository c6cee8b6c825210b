// Package fuzz is differential fuzzing of an implementation of the kbkit
// command model against the reference: it draws inputs for every suite of
// the adapter protocol (spec/ADAPTER.md: documents and commands, valid,
// near-valid and malformed; Window scripts; plans; tokenizer text and
// formulas, Unicode-aware), fills in the expected side from the reference
// (cases.Reference, in process), checks the implementation with the case
// runner (cases.Check, so "differs" means what it means to `kbkit spec
// run`), and shrinks every difference to a minimal case, printed in the
// spec's case format (CaseYAML).
//
// The generators build structure on purpose, where a flat random input
// rarely goes: tables whose formulas form a graph of a drawn shape (a
// cell two others read, diamonds, near-cycles and cycles), moves under a
// deep descendant, restores of several roots, window scripts that undo
// and redo such steps amid rejections, acks and snapshots, workspaces
// with pages merged into merged pages. They draw the command types and
// window events the spec's own cases exercise least most often
// (measured from the built-in cases), and a guide steers them by what
// the reference did: an input whose reply shows a new feature (a verdict,
// an inverse's size, a formula cycle, a window step's actions after the
// step before) joins a corpus, and half of the inputs are mutated corpus
// inputs. Features come from the reference alone, so a seed draws the
// same inputs against any implementation.
//
// Inputs are drawn from a choice sequence (Source) and shrinking edits the
// sequence, as Hypothesis does, so every shrunk input is one the generator
// could have produced; deleting the span of a list element drops a node,
// a step, a page or a text fragment.
//
//	c, _ := adapter.Start(ctx, []string{"node", "adapter.mjs"}, adapter.Options{})
//	rep, err := fuzz.Run(ctx, fuzz.Options{Impl: c, Suites: c.Info().Suites, Seed: 1, Count: 10000})
//	for _, d := range rep.Differences {
//		fmt.Print(d.Outcome.Diff, fuzz.CaseYAML(d.Case))
//	}
package fuzz
