// Package metrics holds the load generator's measurements: HDR histograms
// of latencies (hdrhistogram-go, microseconds), counters, and per-second
// intervals for charts. Each worker records into its own Recorder; Collect
// merges them into a Result, which encodes to JSON exactly (histograms as
// hdrhistogram's Export snapshot) so that the results of several shards
// merge into the histogram of the union.
//
//	rec := metrics.NewRecorder()
//	rec.Latency(metrics.Commit, time.Now(), 12*time.Millisecond)
//	res, _ := metrics.Collect([]*metrics.Recorder{rec})
//	merged, _ := metrics.Merge(shard0, shard1)
package metrics
