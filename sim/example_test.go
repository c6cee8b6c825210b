package sim_test

import (
	"context"
	"fmt"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/sim"
)

// In an implementation's own tests, Run is the one call: each seed is a
// subtest, and a failing checker fails it with its findings and the
// command line that replays it.
//
//	func TestConverges(t *testing.T) {
//		target := sim.Remote(serverURL, []string{token1, token2})
//		sim.Run(t, target, sim.Options{Seeds: 20, Faults: true})
//	}
//
// This example runs the same seeds outside a test (RunSeeds returns the
// reports Run judges) against the reference server on a PostgreSQL that
// kbkit starts itself.
func ExampleRun() {
	ctx := context.Background()
	opts := pgprovider.OptionsFromEnv()
	opts.Fast = true
	pg, err := pgprovider.Start(ctx, opts)
	if err != nil {
		fmt.Println("no PostgreSQL:", err)
		return
	}
	defer pg.Stop(ctx)
	dsn, drop, err := pg.NewDatabase(ctx, "example_run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop(ctx)

	target, err := sim.NewEmbedded(ctx, dsn, sim.EmbeddedOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer target.Close()

	reports, err := sim.RunSeeds(ctx, target, sim.Options{Seed: 1, Seeds: 2, Faults: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reports {
		fmt.Printf("seed %d: failed %v, error %q\n", r.Seed, r.Failed(), r.Err)
	}
	// Output:
	// seed 1: failed false, error ""
	// seed 2: failed false, error ""
}
