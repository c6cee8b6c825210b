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
// The pieces are kept apart: the Pacer is a pure function of
// elapsed time (constant and ramping stages); workload draws commands from
// a seeded source and the rendered page; the runner drives editors in the
// open model (arrivals on schedule, latency from each operation's intended
// start, operations that cannot start on time dropped) or the closed model
// (editors with think time); metrics records HDR histograms per worker
// and merges them; threshold and report judge and render a Result, also
// one read back from JSON and merged from shards (Shard).
//
// The generator must not be the bottleneck of its own measurement: the
// windows of one page in this process decode each event once and apply
// each echo once (client: the same bytes give the same event, the same
// document value the same result; every window still reads its own
// socket, folds its own pending commands and reports its own latencies);
// commands go over the client's own HTTP/1.1 connections; the hot
// payloads are encoded and decoded by hand (the strict decoders decide
// anything unusual); `loadgen run` sets GOGC=400 unless $GOGC is set
// (cli.GCPercent).
//
// Latencies: commit (POST kb.command to its response), echo (intended
// start to the echo at the sending window), fanout (intended start to the
// echo at every other window of the page in this process) and convergence
// (end of the load to each window reaching its page's head).
package loadgen
