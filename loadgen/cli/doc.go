// Package cli is `kbkit loadgen`: run, report, compare, find-max and
// idle. cmd/kbkit mounts NewCommand; Run executes it with an exit status,
// for tests and scripts.
//
//	kbkit loadgen run --workload hot-page --editors 200 --rate 100 --duration 20s \
//	    --threshold 'fanout.p99<250ms' --json run.json
//	kbkit loadgen report shard0.json shard1.json --html report.html
//	kbkit loadgen find-max --workload hot-page --threshold 'commit.p99<50ms' --html max.html
//	kbkit loadgen idle --server http://127.0.0.1:8080 --token kbk_... --windows 5000
package cli
