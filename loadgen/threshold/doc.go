// Package threshold turns a load run into pass or fail, as k6's thresholds
// do: each threshold is an expression over the run's metrics, and a run
// with a broken threshold exits with ExitCode (99, k6's convention).
//
//	ts, err := threshold.ParseAll([]string{"fanout.p99<250ms", "errors==0"})
//	checks, ok := threshold.Evaluate(ts, result)
//
// Expressions: METRIC.STAT OP VALUE for the latencies (commit, echo,
// fanout, convergence; STAT is p50, p90, p99, p99.9, any pN, min, max,
// mean or count; VALUE a duration such as 250ms, or a bare number of
// milliseconds), COUNTER OP N for the counters (errors, rejections,
// retries, refetches, dropped, connects, reconnects, commands, committed,
// local_rejections, due, echoes), errors.KIND and rejections.CODE for one
// kind, rate (committed commands per second), and achieved (an open-model
// run's committed commands over the operations its schedule made due: 0.9
// or 90%; a run with nothing due fails it). OP is one of < <= > >= == !=.
package threshold
