package conformance

import (
	"context"
	"os"
	"testing"

	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func embedded(t *testing.T, opts EmbeddedOptions) *Embedded {
	t.Helper()
	e, err := NewEmbedded(context.Background(), pgprovider.ForTest(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestReferenceServerPasses(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	Run(t, e, Options{Seed: 1, Seeds: 4, Steps: 120, Faults: true, OutDir: t.TempDir()})
}

func TestReferenceServerPassesWithoutFaults(t *testing.T) {
	e := embedded(t, EmbeddedOptions{Instances: 1})
	Run(t, e, Options{Seed: 100, Seeds: 2, Steps: 120})
}

func TestSimulatorExercisesFaults(t *testing.T) {
	e := embedded(t, EmbeddedOptions{})
	reports := Run(t, e, Options{Seed: 7, Seeds: 3, Steps: 150, Faults: true})
	var total Stats
	for _, r := range reports {
		t.Logf("seed %d: %s\n  %+v", r.Seed, r.Faults, r.Stats)
		total.Commands += r.Stats.Commands
		total.Committed += r.Stats.Committed
		total.Rejected += r.Stats.Rejected
		total.Refetches += r.Stats.Refetches
		total.Dropped += r.Stats.Dropped
	}
	if total.Committed == 0 || total.Rejected == 0 {
		t.Errorf("the runs should commit and reject commands: %+v", total)
	}
	if total.Dropped > 0 && total.Refetches == 0 {
		t.Errorf("dropped echoes never led to a refetch: %+v", total)
	}
}
