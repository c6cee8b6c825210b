package selftest

import (
	"time"

	"github.com/subspace/kbkit/sim"
)

// ZooEntry is a published anomaly of a real sync engine, translated into
// this protocol as a broken server (a row of sim/broken) or a bug of the
// example client (examples/client-js --broken).
type ZooEntry struct {
	Name string `json:"name"` // the broken server's or the client bug's name
	Kind string `json:"kind"` // KindServer or KindClient: where it lives
	// Original is what was found, in the original's words, and Links
	// where (issue threads).
	Original string   `json:"original"`
	Links    []string `json:"links"`
	// Counterpart is the same anomaly in this protocol.
	Counterpart string `json:"counterpart"`
	// Checker is what should catch it (the report shows what did).
	Checker string `json:"checker"`
	// Options are the simulator's options it runs with (nil: the
	// defaults of its kind).
	Options *sim.Options `json:"-"`
}

// Zoo is the anomalies selftest runs (its track record is a table of
// docs/power.md).
var Zoo = []ZooEntry{
	{
		Name: "split-plan", Kind: KindServer,
		Original: "ElectricSQL: non-atomic transactions with intermediate reads (a transaction's writes read one at a time, by SQLite and by PostgreSQL clients)",
		Links: []string{"https://github.com/electric-sql/electric/issues/1245",
			"https://github.com/electric-sql/electric/issues/1112"},
		Counterpart: "kb.page of a page answers the state before a plan's derived command (a rename's link rewrite, a merge's restore) while the plan's other effects are visible: half a plan",
		Checker:     "projection",
		Options:     &sim.Options{Steps: 200},
	},
	{
		Name: "stale-page", Kind: KindServer,
		Original: "ElectricSQL: delayed or failed read-your-writes (a client appends, then reads without its own write)",
		Links:    []string{"https://github.com/electric-sql/electric/issues/1254"},
		Counterpart: "every other kb.page of a page answers the snapshot it answered before (consistent but old): a device's acknowledged edit is missing " +
			"from the page it refetches",
		Checker: "convergence",
		Options: &sim.Options{Faults: true, Steps: 150},
	},
	{
		Name: "ack-without-commit", Kind: KindServer,
		Original: "ElectricSQL: lost writes (a successful write that no later read observes)",
		Links:    []string{"https://github.com/electric-sql/electric/issues/1254"},
		Counterpart: "every seventh kb.command is answered with a seq but never forwarded: an acknowledged edit that no echo, " +
			"snapshot or log ever holds",
		Checker: "exactly-once",
		Options: &sim.Options{EchoTimeout: 500 * time.Millisecond, SeedTimeout: 30 * time.Second},
	},
	{
		Name: "resume-behind", Kind: KindServer,
		Original: "PowerSync: non-monotonic reads after disconnect/connect on a flaky network (a key reads an older value than one read before)",
		Links: []string{"https://github.com/powersync-ja/powersync.dart/issues/253",
			"https://github.com/powersync-ja/powersync.dart/issues/226"},
		Counterpart: "a subscription resumed with lastEventId N replays from N-2: after a reconnect the seq goes backwards",
		Checker:     "resume",
		Options:     &sim.Options{Faults: true},
	},
	{
		Name: "revert-pending-on-refetch", Kind: KindClient,
		Original: "PowerSync: local changes reverted when a replication delay is present (the client reconnects and shows the server's state without its uploaded changes until they sync)",
		Links:    []string{"https://github.com/powersync-ja/powersync-sqlite-core/issues/54"},
		Counterpart: "after a refetch the client renders the snapshot alone, its pending commands left out until their echoes " +
			"come: a user's edit disappears, then comes back",
		Checker: "convergence",
		Options: &sim.Options{Faults: true, Steps: 200, ClientFaults: &sim.Faults{Drop: 0.5}},
	},
}

func zooEntry(name string) (ZooEntry, bool) {
	for _, z := range Zoo {
		if z.Name == name {
			return z, true
		}
	}
	return ZooEntry{}, false
}

// ZooRecord is a zoo entry with its track record in this run.
type ZooRecord struct {
	ZooEntry
	Results []Result `json:"results"`
}

// missingZoo returns an error result for each zoo entry of kind that
// selected names but that did not run: it is not in the build.
func missingZoo(opts *Options, kind string, ran []Result) []Result {
	var out []Result
	for _, z := range Zoo {
		if z.Kind != kind || !opts.selected(z.Name) {
			continue
		}
		found := false
		for _, r := range ran {
			found = found || (r.Kind == KindZoo && r.Name == z.Name)
		}
		if !found {
			where, suite := "the broken-server table (sim/broken)", SuiteSim
			if kind == KindClient {
				where, suite = "the example client's bugs (examples/client-js/window.mjs BROKEN)", SuiteClient
			}
			out = append(out, Result{Kind: KindZoo, Name: z.Name, Breaks: z.Counterpart, Suite: suite, Status: Errored,
				Detail: "not in " + where})
		}
	}
	return out
}

// zooRecords joins the zoo with the controls run (an entry that did not
// run has no results: the report says so).
func zooRecords(controls []Result) []ZooRecord {
	var out []ZooRecord
	for _, z := range Zoo {
		rec := ZooRecord{ZooEntry: z}
		for _, c := range controls {
			if c.Kind == KindZoo && c.Name == z.Name {
				rec.Results = append(rec.Results, c)
			}
		}
		out = append(out, rec)
	}
	return out
}
