package main

import (
	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/selftest"
	"github.com/subspace/kbkit/selftest/cli"
	"github.com/subspace/kbkit/sim"
	"github.com/subspace/kbkit/sim/broken"
)

// newSelftestCmd mounts `kbkit selftest` (package selftest/cli), given the
// broken servers of sim/broken, which only cmd/ may import.
func newSelftestCmd() *cobra.Command { return cli.NewCommand(brokenServers()) }

func brokenServers() selftest.Servers {
	s := selftest.Servers{
		New: broken.New,
		AtRest: func(t sim.Target) (sim.Target, func(), error) {
			p := broken.NewProxy(t, broken.AtRest())
			return p, p.Close, nil
		},
	}
	for _, b := range broken.Table {
		s.Table = append(s.Table, selftest.BrokenServer{Name: b.Name, Breaks: b.Breaks, WireOnly: broken.WireOnly(b.Name)})
	}
	return s
}
