package conformance

import (
	"fmt"
	"sort"
	"strings"
)

// brokenVariants are the deliberately broken servers of mutate.go, by name.
var brokenVariants = map[string]func() mutation{
	"double-echo":  mutDoubleEcho,
	"reorder":      mutReorder,
	"skip-dedup":   mutSkipDedup,
	"drop-derived": mutDropDerived,
}

// BrokenVariants lists the names Broken accepts.
func BrokenVariants() []string {
	out := make([]string, 0, len(brokenVariants))
	for n := range brokenVariants {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Broken puts target behind a proxy that breaks one guarantee of
// spec/PROTOCOL.md, to watch kbkit's checkers and reports catch it (the
// tests of this package use the same variants): double-echo logs every
// command of seq 3 mod 8 twice, reorder swaps the commands of seqs 4 and
// 5 mod 10, skip-dedup applies a retried command again, drop-derived
// never publishes derived commands. The returned func stops the proxy.
func Broken(target Target, name string) (Target, func(), error) {
	mk, ok := brokenVariants[name]
	if !ok {
		return nil, nil, fmt.Errorf("%w: no broken-server variant %q (one of %s)", ErrCannotRun, name, strings.Join(BrokenVariants(), ", "))
	}
	p := newMutatingProxy(target, mk())
	return p, p.Close, nil
}
