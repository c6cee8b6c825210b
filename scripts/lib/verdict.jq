# verdict.jq: one round of make bench-server judged (scripts/bench-server.sh,
# scripts/bench-judge.sh). Input: the round's <phase>.result.json files,
# slurped; arguments: strict (STRICT), phase (seconds per phase), floor
# (--slurpfile of kbkit bench floor's JSON). Output: the round's
# results.json (phases, checks, missed targets and goals, out of reach).

(map({key: .phase, value: .}) | from_entries) as $p |
($floor[0] // {}) as $fl |
def check(name; kind; value; op; limit; what):
  {name: name, kind: kind, value: value, op: op, limit: limit, what: what,
   met: (if value == null then false elif op == ">=" then value >= limit else value <= limit end)};
# with_floor(key; value; unit): the floor under the figure of a check, as
# information. bounded_by(key; value; unit): a floor the figure cannot go
# under (the same system calls, one per message): a check whose floor is
# itself past the limit is out of reach on this machine, reported as such
# and not counted by STRICT. (The HTTP client floor is information only:
# the generator does not use net/http for its commands.)
def with_floor(key; v; unit): if v == null then . else . + {(key): v} | .what += "; floor \(v | if . < 1 then . * 1000 | round / 1000 else . * 10 | round / 10 end) \(unit)" end;
def bounded_by(key; v; unit): with_floor(key; v; unit)
  | if v != null and (.met | not) and .op == "<=" and v > .limit then . + {out_of_reach: true} else . end;
def lb($n; f): [($fl.loopback // [])[] | select(.sockets == $n) | f][0];
def ran(names): all(names[]; $p[.] != null);
# pgb(name): pgbench run before the load and again after it, as one:
# the mean of the two (tps, CPU per transaction), so that a slow spell
# of the shared machine during one side only moves the ratio by half.
def pgb(n): $p[n] as $a | $p[n + "-after"] as $b |
  if $a == null or $b == null then $a
  else $a + {tps: (($a.tps + $b.tps) / 2), tps_before: $a.tps, tps_after: $b.tps,
    ms_per_transaction: ($a.ms_per_transaction | with_entries(.value = (.value + $b.ms_per_transaction[.key]) / 2))} end;
# ceiling(phase; n): the machine use of the two sides of a ratio
# (information beside the verdict): the cores the kbkit load used,
# those pgbench used (the mean of its two runs), and the commands/s the
# kbkit load would reach with its CPU per command on every core, as a
# ratio to pgbench: a round whose ceiling ratio is under the target is
# bound by CPU per command, whatever the scheduling.
def ceiling(ph; n): $p[ph].machine_cpu as $m |
  ([$p[n], $p[n + "-after"]] | map(select(. != null) | .machine_cpu.used_cores) | add / length) as $u |
  if ($m.used_cores // 0) > 0 then
    ($p[ph].rate * $m.cores / $m.used_cores) as $c |
    . + {used_cores: $m.used_cores, pgbench_used_cores: $u, ceiling_rate: $c, ceiling_ratio: ($c / pgb(n).tps)}
    | .what += "; cores used \($m.used_cores * 100 | round / 100) of \($m.cores) (pgbench \($u * 100 | round / 100)); on all \($m.cores): \($c | round) commands/s, \($c / pgb(n).tps * 100 | round / 100)× pgbench"
  else . end;
def tps_what(n): pgb(n) | if .tps_after then "\(.tps * 10 | round / 10) tps (mean of \(.tps_before * 10 | round / 10) before and \(.tps_after * 10 | round / 10) after the load)" else "\(.tps) tps" end;
# The verdict against the machine itself (targets): each figure over
# a bound computed from the floors the same run measured of this machine
# (kbkit bench floor), never from the load's own figures, so that a
# slower or busier machine moves both sides and slower code moves one.
# bound(ph): the tighter of two bounds of a closed-model load:
#   cpu: the cores other processes left it, each doing one command per
#     HTTP request floor of CPU (client and server of one request);
#   chain: its writers, one command in flight each, all decided by one
#     durable commit: writers ÷ (an fdatasync + two loopback round trips,
#     the writer's to the server and the server's to PostgreSQL).
# Beside it, information: how the server's transaction slot spent the
# load (working: Postgres and planning; gathering the next group).
def bound(ph): $p[ph] as $x | $x.machine_cpu as $m |
  ([$m.cores - ($m.others_cores // 0), 0.01] | max) as $left |
  (($fl.http // null) | if . == null then null else (.client_us_per_request + .server_us_per_request) end) as $http_us |
  (if $http_us != null and $http_us > 0 then $left * 1e6 / $http_us else null end) as $cpu |
  ($fl.fsync.us_per_op // null) as $sync_us | ($fl.roundtrip.us_per_round_trip // null) as $rt_us |
  (if $sync_us != null and $rt_us != null and ($x.editors // 0) > 0 then $x.editors * 1e6 / ($sync_us + 2 * $rt_us) else null end) as $chain |
  {cpu: $cpu, chain: $chain, left: $left, tight: ([$cpu, $chain] | map(select(. != null)) | min)};
def slot_what(ph): $p[ph].waits.slot_busy_fraction // null |
  if . == null or .total == null then "" else
    "; the server's transaction slot worked \((.postgres + .planning) * 100 | round)% of the load (Postgres \(.postgres * 100 | round)%, planning \(.planning * 100 | round)%) and gathered \(.gathering * 100 | round)%" end;
def bound_check(ph; limit): bound(ph) as $b | select($b.tight != null) |
  check("\(ph) rate ÷ machine bound"; "target"; $p[ph].rate / $b.tight; ">="; limit;
    "\($p[ph].rate * 10 | round / 10) commands/s ÷ \($b.tight | round) (the tighter of the CPU bound, \($b.left * 100 | round / 100) cores others left at one HTTP request floor each, \($b.cpu // "n/a" | if type == "number" then round else . end) commands/s, and the commit bound, \($p[ph].editors) writers per fdatasync and two round trips, \($b.chain // "n/a" | if type == "number" then round else . end) commands/s)\(slot_what(ph))")
  + {bound_cpu_rate: $b.cpu, bound_chain_rate: $b.chain};
# chain_check(ph; limit): the load's rate over its transaction slot's own
# bound, the serial chain every command of it goes through (one group
# transaction at a time): the commands of a group over the time the slot
# held a group working (Postgres and planning), that is the share of the
# load's time the slot worked. Gathering the next group is not work: a
# server that holds the slot idle, or answers slowly so that its writers
# come back late, lowers it, while a slower or busier machine slows the
# work and the gathering alike.
def chain_check(ph; limit): $p[ph].waits.slot_busy_fraction as $s |
  select($s != null and $s.postgres != null and $s.planning != null and ($s.postgres + $s.planning) > 0) |
  ($s.postgres + $s.planning) as $w | ($p[ph].rate / $w) as $chain |
  check("\(ph) rate ÷ chain bound"; "target"; $p[ph].rate / $chain; ">="; limit;
    "\($p[ph].rate * 10 | round / 10) commands/s ÷ \($chain | round) (its transaction slot's own bound: the commands of a group over the time the slot held a group working; the slot worked \($w * 100 | round)% of the load, Postgres \($s.postgres * 100 | round)% and planning \($s.planning * 100 | round)%, and gathered \(($s.gathering // 0) * 100 | round)%)")
  + {bound_chain_own_rate: $chain};
def http_floor_ms: ($fl.http // null) | if . == null then null else (.client_us_per_request + .server_us_per_request) / 1000 end;
[ select(ran(["many-pages"])) | bound_check("many-pages"; 0.25) ]
+ [ select(ran(["hot-page"])) | bound_check("hot-page"; 0.25) ]
+ [ ("many-pages", "hot-page") as $ph | select(ran([$ph])) | chain_check($ph; 0.5) ]
+ [ ("many-pages", "hot-page") as $ph | select(ran([$ph]) and http_floor_ms != null and $p[$ph].ms_per_command != null) |
    ($p[$ph].ms_per_command | .generator + .server + .postgres) as $c |
    check("\($ph) CPU per command ÷ HTTP floor"; "target"; $c / http_floor_ms; "<="; 6;
      "\($c * 1000 | round / 1000) ms (generator, server and postgres) ÷ \(http_floor_ms * 1000 | round / 1000) ms of CPU per HTTP request (client and server)") ]
# The ratios to pgbench: context, never a verdict (pgbench with one client
# is bound by the loopback round trip, with 8 by fsync and CPU; the
# ratio moves with the machine, not with the code).
+ [ select(ran(["many-pages", "pgbench-c8"])) | check("many-pages ratio"; "info"; $p["many-pages"].rate / pgb("pgbench-c8").tps; ">="; 1.3;
        "\($p["many-pages"].rate * 10 | round / 10) commands/s ÷ \(tps_what("pgbench-c8")), 8 clients") | ceiling("many-pages"; "pgbench-c8")
      | with_floor("floor_round_trip_us"; $fl.roundtrip.us_per_round_trip; "µs per loopback round trip")
] + [ select(ran(["hot-page", "pgbench-c1"])) | check("hot-page ratio"; "info"; $p["hot-page"].rate / pgb("pgbench-c1").tps; ">="; 3.5;
        "\($p["hot-page"].rate * 10 | round / 10) commands/s ÷ \(tps_what("pgbench-c1")), 1 client") | ceiling("hot-page"; "pgbench-c1")
      | with_floor("floor_round_trip_us"; $fl.roundtrip.us_per_round_trip; "µs per loopback round trip")
] + [ select(ran(["fanout"])) | check("fan-out/commit p99"; "target"; $p.fanout.fanout_p99_ms / $p.fanout.commit_p99_ms; "<="; 1.5;
        "fan-out p99 \($p.fanout.fanout_p99_ms)ms ÷ commit p99 \($p.fanout.commit_p99_ms)ms (200 windows)") ]
+ [ $p | to_entries[] | select(.key | startswith("idle-")) | .value |
    check("RSS per idle window (\(.windows))"; "target"; .kb_per_window; "<="; 20;
          "KB: \(.rss_kb_before) kB -> \(.rss_kb_after) kB for \(.subscribed) windows") ]
+ [ ("fanout", "fanout-2000") as $f | select(ran([$f])) | $p[$f] |
    (check("server µs per echo (\(.windows_per_page) windows)"; "target"; .us_per_echo.server; "<="; 5;
          "\(.cpu_seconds.server)s for \(.counts.echoes) echoes") | bounded_by("floor_us"; lb($p[$f].windows_per_page; .us_per_write); "µs per loopback write")),
    (check("generator µs per echo (\(.windows_per_page) windows)"; "goal"; .us_per_echo.generator; "<="; 10;
          "\(.cpu_seconds.generator * 100 | round / 100)s for \(.counts.echoes) echoes") | bounded_by("floor_us"; lb($p[$f].windows_per_page; .us_per_read); "µs per loopback read")) ]
+ [ select(ran(["many-pages", "pgbench-c8"])) | (check("server ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.server; "<="; 0.15; "server process")
      | bounded_by("floor_ms"; $fl.http.server_us_per_request | if . then . / 1000 else null end; "ms per HTTP request served")),
    check("postgres ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.postgres; "<=";
          (pgb("pgbench-c8").ms_per_transaction.postgres / 2); "half of pgbench 8 clients: \(pgb("pgbench-c8").ms_per_transaction.postgres * 10000 | round / 10000) ms per transaction"),
    (check("generator ms per command (many-pages)"; "goal"; $p["many-pages"].ms_per_command.generator; "<="; 0.10; "generator process")
      | with_floor("floor_ms"; $fl.http.client_us_per_request | if . then . / 1000 else null end; "ms per HTTP request sent"))
] + [ select(ran(["hot-page"])) | check("generator ms per command (hot-page)"; "goal"; $p["hot-page"].ms_per_command.generator; "<="; 0.10; "generator process") ]
+ [ $p | to_entries[] | select(.value.counts_agree == false) | .value |
    {name: "counts of \(.phase)", kind: "target", value: null, op: "==", limit: null, what: "\(.counts)", met: false} ]
| {phase_seconds: $phase, strict: $strict, floors: $fl, phases: $p, checks: .,
   missed_targets: map(select(.kind == "target" and (.met | not) and (.out_of_reach | not)) | .name),
   missed_goals: map(select(.kind == "goal" and (.met | not) and (.out_of_reach | not)) | .name),
   out_of_reach: map(select(.out_of_reach) | .name)}
