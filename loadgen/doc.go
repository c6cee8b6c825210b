// Package loadgen is kbkit's load generator: virtual editors that edit
// pages of any server speaking spec/PROTOCOL.md through real Windows
// (kbcore.Window), each with its own WebSocket subscription, so that
// rebase and fan-out cost is real.
//
//	target, stop, _ := loadgen.StartEmbedded(ctx, loadgen.EmbeddedOptions{})
//	defer stop()
//	spec, _ := workload.Named("hot-page")
//	res, err := loadgen.Run(ctx, target, loadgen.Config{
//		Workload: spec, Model: loadgen.Open, Pacer: loadgen.Constant(100),
//		Editors: 200, Duration: 20 * time.Second,
//	})
//	report.Text(os.Stdout, res)
//
// The pieces are kept apart, as in vegeta: the Pacer is a pure function of
// elapsed time (constant and ramping stages); workload draws commands from
// a seeded source and the rendered page; the runner drives editors in the
// open model (arrivals on schedule, latency from each operation's intended
// start, operations that cannot start on time dropped) or the closed model
// (editors with think time); metrics records HDR histograms per worker
// and merges them; threshold and report judge and render a Result, also
// one read back from JSON and merged from shards (Shard).
//
// Latencies: commit (POST kb.command to its response), echo (intended
// start to the echo at the sending window), fanout (intended start to the
// echo at every other window of the page in this process) and convergence
// (end of the load to each window reaching its page's head).
package loadgen
