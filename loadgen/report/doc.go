// Package report renders load generator results: a text summary for the
// terminal and a self-contained HTML page (inline SVG charts, no script or
// file fetched when it is viewed) with latency percentiles over time,
// throughput over time, latency distributions and the summary table.
//
//	res, _ := metrics.ReadFile("run.json")
//	report.Text(os.Stdout, res)
//	report.HTML(f, res)
package report
