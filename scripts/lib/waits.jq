# waits.jq: where a load phase's commands spent their time, from kbkit
# serve's metrics (spec/PROTOCOL.md section 9) and PostgreSQL's WAL
# counters, scraped as the measured load began ($m0) and as it ended
# ($m1), over $s seconds and $n committed commands (bench-server).
def d(k): (($m1[0][k] // 0) - ($m0[0][k] // 0));
def per(a; b): if b > 0 then a / b else null end;
# timed(k): k's growth, or null when either scrape lacks it.
def timed(k): if ($m0[0] | has(k)) and ($m1[0] | has(k)) then d(k) else null end;
["optimistic", "usual", "alone"] as $paths |
($paths | map({key: ., value: d("kbkit_store_transactions_total{path=\"\(.)\"}")}) | from_entries) as $tx |
($paths | map(d("kbkit_store_transaction_commands_total{path=\"\(.)\"}")) | add) as $ncmd |
($paths | map(d("kbkit_store_transaction_seconds_total{path=\"\(.)\"}")) | add) as $txs |
([$tx[]] | add) as $ntx |
(["1", "3", "7", "15", "31", "63", "+Inf"] | map(d("kbkit_store_transaction_size_bucket{le=\"\(.)\"}"))) as $cum |
(d("kbkit_command_seconds_total{transport=\"http\"}") + d("kbkit_command_seconds_total{transport=\"ws\"}")) as $inserver |
{
  transactions: $ntx,
  commands_decided: $ncmd,
  commands_per_transaction: per($ncmd; $ntx),
  transaction_share: ($tx | map_values(per(.; $ntx))),
  transaction_sizes: ([range(0; 7)] | map({key: (["1", "2-3", "4-7", "8-15", "16-31", "32-63", "64+"][.]),
      value: per($cum[.] - (if . > 0 then $cum[. - 1] else 0 end); $ntx)}) | from_entries),
  websocket_frames_per_write: per(d("kbkit_websocket_frames_total"); d("kbkit_websocket_writes_total")),
  websocket_writes_per_command: per(d("kbkit_websocket_writes_total"); $n),
  wal_flushes: d("pg_wal_sync"),
  commands_per_wal_flush: per($n; d("pg_wal_sync")),
  ms_per_wal_flush: (timed("pg_wal_sync_ms") as $ms | if $ms == null then null else per($ms; d("pg_wal_sync")) end),
  wal_flush_fraction: (timed("pg_wal_sync_ms") as $ms | if $ms == null then null else per($ms / 1000; $s) end),
  ms_per_command: {
    in_server: per(1000 * $inserver; $n),
    in_store: per(1000 * d("kbkit_command_store_seconds_total"); $n),
    outside_store: per(1000 * ($inserver - d("kbkit_command_store_seconds_total")); $n),
    queued_for_page: per(1000 * d("kbkit_store_queue_seconds_total"); $ncmd)
  },
  ms_per_transaction: {
    total: per(1000 * $txs; $ntx),
    postgres: per(1000 * d("kbkit_store_postgres_seconds_total"); $ntx),
    planning: per(1000 * ($txs - d("kbkit_store_postgres_seconds_total")); $ntx)
  },
  slot_busy_fraction: {
    total: per(d("kbkit_store_hold_seconds_total"); $s),
    postgres: per(d("kbkit_store_postgres_seconds_total"); $s),
    planning: per($txs - d("kbkit_store_postgres_seconds_total"); $s),
    gathering: per(d("kbkit_store_gather_seconds_total"); $s)
  }
}
