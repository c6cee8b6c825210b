# scripts/lib/scaling-table.jq: bench-scaling.sh's markdown tables from its
# scaling.json:
#   jq -r --argjson u "$(ulimit -n)" -f scripts/lib/scaling-table.jq OUT/scaling.json
def r(n): if . == null then "n/a" else (. * pow(10; n) | round / pow(10; n) | tostring) end;
# The machine's cores: used by this run's three processes, busy with
# others' work, idle (nproc less the whole machine's busy time).
def cores($n): .machine_cpu | "\(.used_cores | r(2)) (\(.used_fraction * 100 | round)%) | \(.others_cores | r(2)) | \([$n - .machine_busy_cores, 0] | max | r(2))";
.nproc as $n |
"Measured \(.date) on \(.host) (\($n) cores shared with other users), PHASE=\(.phase_seconds) s per point after \(.warmup_seconds) s of warm-up, commit \(.commit), `scripts/bench-scaling.sh`.",
"",
"Floors (`kbkit bench floor`, same run): fdatasync after an 8 KiB write \(.floors.fsync.ops_per_second | round)/s (\(.floors.fsync.us_per_op | round) µs each); HTTP POST 300 B -> 50 B at \(.floors.http.requests_per_second | round)/s: client \(.floors.http.client_us_per_request | r(1)) µs, server \(.floors.http.server_us_per_request | r(1)) µs of CPU per request.",
"",
"Many pages (1,000 pages, closed model); CPU ms per committed command. Cores: used by generator + server + PostgreSQL (share of \($n)), busy with other users' work, idle.",
"",
"| writers | commands/s | commit p50 ms | commit p99 ms | generator ms | server ms | postgres ms | cores used | others | idle |",
"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
(.many_pages[] | "| \(.writers) | \(.rate | r(1)) | \(.commit_p50_ms | r(2)) | \(.commit_p99_ms | r(2)) | \(.ms_per_command.generator | r(3)) | \(.ms_per_command.server | r(3)) | \(.ms_per_command.postgres | r(3)) | \(cores($n)) |"),
"",
"Fan-out (hot page, open model, 20,000 echoes/s asked; dropped: operations the open model let go, too late to start); CPU µs per echo delivered. Floor: CPU per loopback TCP write / read of a 200-byte message, same sockets, 20,000/s.",
"",
"| windows | commands/s | dropped of due | echoes/s | server µs | generator µs | floor write / read µs | fan-out p50 ms | fan-out p99 ms | cores used | others | idle |",
"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
(.fanout[] | "| \(.windows)\(if .asked != null and .asked != .windows then " (asked \(.asked): ulimit -n \($u))" else "" end) | \(.rate | r(1)) | \(.dropped // "n/a") of \(.due // "n/a") | \(.echoes_per_second | round) | \(.us_per_echo.server | r(1)) | \(.us_per_echo.generator | r(1)) | \(.floor_us.write | r(1)) / \(.floor_us.read | r(1)) | \(.fanout_p50_ms | r(1)) | \(.fanout_p99_ms | r(1)) | \(cores($n)) |"),
"",
"Idle subscribed windows (a fresh kbkit serve each; VmRSS after 50 windows, then with the count).",
"",
"| windows | subscribed | RSS before kB | RSS after kB | KB per window |",
"|---:|---:|---:|---:|---:|",
(.idle[] | "| \(.windows)\(if .asked != .windows then " (asked \(.asked): ulimit -n \($u))" else "" end) | \(.subscribed) | \(.rss_kb_before) | \(.rss_kb_after) | \(.kb_per_window | r(1)) |")
