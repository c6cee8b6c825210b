# rounds.jq: the rounds of make bench-server (ROUNDS > 1) as one result
# (scripts/bench-server.sh, scripts/bench-judge.sh): the median of each
# check over the rounds, with its spread; STRICT judges the median. Input:
# the rounds' results.json, slurped; argument: rounds.

def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
(.[0] | {phase_seconds, strict, floors}) + {rounds: $rounds, round_results: map({phases, checks})} +
{checks: ([.[].checks[]] | group_by(.name) | map(
    (map(.value) | map(select(. != null))) as $v |
    (map(.limit) | map(select(type == "number"))) as $l |
    (.[0] + {values: map(.value), min: ($v | min), max: ($v | max), value: (if ($v | length) > 0 then $v | median else null end)}
      + (if ($l | length) > 0 then {limit: ($l | median)} else {} end)
      + (map(.ceiling_ratio | select(. != null)) as $c |
         if ($c | length) > 0 then {ceiling_ratio: ($c | median), ceiling_ratios: map(.ceiling_ratio),
           used_cores: (map(.used_cores | select(. != null)) | median),
           pgbench_used_cores: (map(.pgbench_used_cores | select(. != null)) | median)} else {} end)) |
    .met = (if .value == null then false elif .op == ">=" then .value >= .limit elif .op == "<=" then .value <= .limit else .met end) |
    .out_of_reach = (.out_of_reach and (.met | not)) |
    .what = "median of \(.values | length) (\(.values | map(if . == null then "n/a" else . * 1000 | round / 1000 | tostring end) | join(", ")))\(if .ceiling_ratios then "; ceiling \(.ceiling_ratios | map(if . == null then "n/a" else . * 100 | round / 100 | tostring end) | join(", "))× pgbench" else "" end); round 1: \(.what)"))} |
.missed_targets = (.checks | map(select(.kind == "target" and (.met | not) and (.out_of_reach | not)) | .name)) |
.missed_goals = (.checks | map(select(.kind == "goal" and (.met | not) and (.out_of_reach | not)) | .name)) |
.out_of_reach = (.checks | map(select(.out_of_reach) | .name))
