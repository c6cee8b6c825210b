package pgfault

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/server/pgprovider"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

func measure(t *testing.T, topo pgprovider.Topology) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Topology: topo, Writers: 4, Before: time.Second, After: time.Second,
		Detect: 600 * time.Millisecond, Settle: 5 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatalf("Run %s: %v", topo, err)
	}
	var out bytes.Buffer
	Text(&out, res)
	t.Logf("%s", out.String())
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	return res
}

// With a synchronous standby, a failover under load loses nothing: every
// acknowledged command is in the new primary's log at its seq, no id
// twice, no seq reused, every window converges, and writes resume after
// the promotion. The outage was real: attempts failed meanwhile.
func TestSyncStandbyFailoverLosesNothing(t *testing.T) {
	res := measure(t, pgprovider.TopologySyncStandby)
	switch {
	case !res.OK():
		t.Fatalf("findings: %q", res.Findings)
	case res.Acknowledged == 0 || res.Found != res.Acknowledged || res.Lost != 0 || res.Duplicated != 0 || res.SeqReused != 0:
		t.Fatalf("acknowledged %d found %d lost %d duplicated %d seq reused %d", res.Acknowledged, res.Found, res.Lost, res.Duplicated, res.SeqReused)
	case res.FailedAttempts == 0 || res.WritesFailed <= 0:
		t.Fatalf("no write failed during a %s outage (%d failed attempts): the primary was not lost", 600*time.Millisecond, res.FailedAttempts)
	case res.PromotionToFirstWrite < 0 || res.PromotionToConverged < 0 || res.Converged != res.Windows:
		t.Fatalf("promotion -> first write %.3f s, -> converged %.3f s, %d of %d windows converged", res.PromotionToFirstWrite, res.PromotionToConverged, res.Converged, res.Windows)
	case res.Timeline.Promoted < res.Timeline.Lost+600*time.Millisecond || res.LostPrimary == res.NewPrimary:
		t.Fatalf("timeline %+v, lost %s new %s", res.Timeline, res.LostPrimary, res.NewPrimary)
	}
}

// With an asynchronous standby the same run loses what the primary
// acknowledged during the stall, and the measurement says so: lost > 0,
// the seqs clients were given reused, the run fails.
func TestAsyncStandbyFailoverLosesAcknowledged(t *testing.T) {
	res := measure(t, pgprovider.TopologyAsyncStandby)
	if res.OK() || res.Lost == 0 || res.SeqReused == 0 || res.Acknowledged != res.Found+res.Lost+res.Misplaced {
		t.Fatalf("async: ok %v, acknowledged %d found %d lost %d misplaced %d seq reused %d", res.OK(), res.Acknowledged, res.Found, res.Lost, res.Misplaced, res.SeqReused)
	}
	if !strings.Contains(strings.Join(res.Findings, "\n"), "acknowledged commands are not in the new primary's log") {
		t.Fatalf("findings do not name the loss: %q", res.Findings)
	}
}

// Bad configurations are refused before anything starts.
func TestConfigRefused(t *testing.T) {
	for _, c := range []Config{
		{Topology: pgprovider.TopologySingle},
		{Topology: "triple"},
		{Writers: 2, Shared: 3},
		{Before: -time.Second},
		{Settle: -time.Second},
		{Writers: 1000},
	} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("Run(%+v) started", c)
		}
	}
}

func TestOutageAndGap(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []span{{at(500), at(700)}, {at(0), at(100)}, {at(50), at(150)}, {at(650), at(900)}}
	if got := outage(spans); got != 550*time.Millisecond {
		t.Errorf("outage = %s, want 550ms (0-150 and 500-900)", got)
	}
	if got := outage(nil); got != 0 {
		t.Errorf("outage(nil) = %s", got)
	}
	acks := []time.Time{at(300), at(100), at(1500), at(200)}
	if got := longestGap(acks, t0, at(2000)); got != 1200*time.Millisecond {
		t.Errorf("longestGap = %s, want 1.2s (300 -> 1500)", got)
	}
	if got := longestGap(acks, t0, at(1000)); got != 700*time.Millisecond {
		t.Errorf("longestGap until 1 s = %s, want 700ms (the last answer to the end)", got)
	}
}
