// Package cases loads kbkit's language-neutral YAML case files and checks an
// implementation against them.
//
//	all, _ := cases.Open() // the built-in spec's cases
//	for _, c := range all {
//		r := cases.Check(ctx, cases.Reference{}, c)
//		if r.Status != cases.Pass { fmt.Println(r.ID, r.Diff) }
//	}
//
// A case's suite follows from its shape (`when.cmd`, `when.text` or
// `when.formula`, ...), never from its file name or id.
package cases
