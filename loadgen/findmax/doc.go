// Package findmax finds the highest open-model rate a server sustains
// under an objective (kbkit loadgen find-max), as durable-streams'
// saturation finder does: steps of loadgen.Run at constant rates,
// doubled from a start rate while they meet the objective (halved while
// they do not), then bisected between the highest passing rate and the
// lowest failing one (Search, a pure function of the steps' outcomes).
//
//	res, err := findmax.Find(ctx, findmax.Config{Target: tgt, Run: cfg,
//		Plan:      findmax.Plan{StartRate: 50},
//		Objective: ths, // threshold.ParseAll("commit.p99<50ms")
//	})
//	findmax.Text(os.Stdout, res)
//
// The objective is thresholds (loadgen/threshold), with achieved>=0.9
// added unless one is on achieved. Each step also measures the generator
// beside the server: its process's CPU against the cores it may use, the
// Go scheduler's p99 wait of its goroutines for a CPU, the server's
// process_cpu_seconds_total and the machine's CPU (Linux /proc/stat). The
// verdict names what ran out at the step that broke the objective, the
// generator first, so that a generator out of CPU is never read as a slow
// server: LimitGenerator, LimitMachine, LimitShared (the embedded server
// in the generator's process), LimitEditors or LimitServer.
package findmax
