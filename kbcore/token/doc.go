// Package token is kbkit's tokenizer: a pure function from node text to the
// references ([[links]], #tags, ((embeds))) and the label it contains, and
// from a table cell value to the references and dependencies of its formula.
//
// Node text is the source of truth; the index (backlinks, labels, formula
// dependencies) is derived from what this package extracts. The rules are
// normative and written down in spec/tokenizer.md; spec/tokenizer.yaml holds
// the language-neutral cases that every implementation must pass.
//
// Usage:
//
//	toks := token.Tokenize("cash: $610,000\nsee [[Budget]] #finance")
//	for _, r := range toks.Refs {
//		// r.Kind is "link", "tag" or "embed"; text[r.Start:r.End] is the
//		// span a rename rewrites.
//		key := token.NormalizeTitle(r.Title) // compare titles after NFC
//		_ = key
//	}
//	if toks.Label != nil && toks.Label.Number != nil {
//		// toks.Label.Key == "cash", *toks.Label.Number == 610000
//	}
//	f := token.TokenizeFormula("=A1*2 + [[Budget]]:cash")
//	// f.Deps == [{Cell: "A1"} {Page: "Budget", Label: "cash"}]
//	_ = token.TagSpelling("multi word") // "#[[multi word]]"
//
// Every function is pure (no I/O, clock or goroutines), total, and never
// panics, whatever the input, invalid UTF-8 included. Byte offsets are
// offsets into the string passed in; titles are substrings of it, never
// normalised or unescaped.
package token
