package server

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/subspace/kbkit/server/store"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	// commands counts kb.command calls by outcome: committed, duplicate
	// (a retried id, answered with its original seq), rejected (CONFLICT),
	// refused (trust boundary: 4xx, nothing written), retryable (transient
	// store failure, 503), error (500).
	commands *prometheus.CounterVec
	// commitSeconds is the latency of decided commands (the store
	// transaction, retries included).
	commitSeconds prometheus.Histogram
	// calls counts tRPC calls by path and tRPC code ("OK" on success).
	calls *prometheus.CounterVec
	// websockets is the number of open WebSocket connections.
	websockets prometheus.Gauge
	// refused counts what the limits of section 8 turned away, by limit:
	// connections, overload, auth_failures, subscriptions, batch,
	// body_timeout, params_timeout.
	refused *prometheus.CounterVec
	// panics counts recovered panics (each a server bug).
	panics prometheus.Counter
	// tokenLookups counts tokens looked up in the database (the token
	// cache did not have them).
	tokenLookups prometheus.Counter
	// commandSeconds sums, by transport, the time kb.command calls spent
	// in this server: HTTP from the request's headers read to its answer
	// written, WebSocket from the message read to its reply queued.
	commandSeconds *prometheus.CounterVec
	// submitSeconds sums the time of those calls in the store (Submit):
	// the rest of commandSeconds is the transport, parsing and checks.
	submitSeconds prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, s *Server) *metrics {
	m := &metrics{
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbkit_commands_total",
			Help: "kb.command calls by outcome: committed, duplicate, rejected, refused (4xx before any write), retryable (503), error (500).",
		}, []string{"outcome"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kbkit_commit_duration_seconds",
			Help:    "Latency of decided commands: the store transaction including its retries.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5ms .. ~16s
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kbkit_trpc_calls_total",
			Help: "tRPC calls (HTTP and WebSocket) by procedure path and tRPC code (OK on success).",
		}, []string{"path", "code"}),
		websockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kbkit_websocket_connections",
			Help: "Open WebSocket connections.",
		}),
	}
	m.refused = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbkit_limit_refusals_total",
		Help: "Connections and calls refused by a limit (spec/PROTOCOL.md section 8), by limit.",
	}, []string{"limit"}))
	m.panics = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kbkit_recovered_panics_total",
		Help: "Panics recovered in goroutines handling client input (each a server bug; the call got INTERNAL_SERVER_ERROR).",
	}))
	m.tokenLookups = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kbkit_token_lookups_total",
		Help: "Bearer tokens looked up in the database because the token cache did not hold them (a valid token is served from the cache).",
	}))
	m.commandSeconds = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kbkit_command_seconds_total",
		Help: "Time kb.command calls spent in this server, by transport (http: from the request's headers read to its answer handed to the HTTP layer; ws: from the message read to its reply queued).",
	}, []string{"transport"}))
	m.submitSeconds = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kbkit_command_store_seconds_total",
		Help: "The part of kbkit_command_seconds_total spent in the store (queueing for the page and the transaction); the rest is transport, parsing and checks.",
	}))
	register[prometheus.Collector](reg, waitsCollector{s})
	m.commands = register(reg, m.commands)
	m.commitSeconds = register(reg, m.commitSeconds)
	m.calls = register(reg, m.calls)
	m.websockets = register(reg, m.websockets)
	hub := func(f func() float64) func() float64 {
		return func() float64 {
			if s.hub == nil {
				return 0
			}
			return f()
		}
	}
	// Read at each scrape.
	for _, f := range []struct {
		name, help string
		gauge      bool
		value      func() float64
	}{
		{"kbkit_outbox_lag_seconds", "How far this instance's dispatcher is behind the outbox (commit to delivery).", true,
			hub(func() float64 { return s.hub.Lag().Seconds() })},
		{"kbkit_subscribers", "Page subscriptions served by this instance's dispatcher.", true,
			hub(func() float64 { return float64(s.hub.Subscribers()) })},
		{"kbkit_group_commits_total", "Transactions of this instance that decided several queued commands of one page.", false,
			func() float64 { return float64(s.st.Stats().Batches) }},
		{"kbkit_group_committed_commands_total", "Commands decided in those group transactions.", false,
			func() float64 { return float64(s.st.Stats().BatchedCommands) }},
		{"kbkit_group_commit_failures_total", "Group transactions that failed; their commands were then decided one by one.", false,
			func() float64 { return float64(s.st.Stats().BatchFailures) }},
		{"kbkit_websocket_writes_total", "Writes to this process's WebSockets: each carries one or more frames (events, replies) queued at once.", false,
			func() float64 { return float64(wsWrites.Load()) }},
		{"kbkit_websocket_frames_total", "Frames those writes carried; divided by kbkit_websocket_writes_total, the frames one write carried.", false,
			func() float64 { return float64(wsFrames.Load()) }},
		{"kbkit_websocket_events_with_replies_total", "Events queued right after the reply to a kb.command call on the same WebSocket (its subscription of the page was owed them), rather than by the dispatcher.", false,
			func() float64 { return float64(wsEchoes.Load()) }},
		{"kbkit_optimistic_conflicts_total", "Command transactions decided in one round trip against cached page heads that found a head changed (another instance wrote) or an id decided before, and were decided again the usual way.", false,
			func() float64 { return float64(s.st.Stats().OptimisticConflicts) }},
	} {
		if f.gauge {
			register[prometheus.Collector](reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: f.name, Help: f.help}, f.value))
		} else {
			register[prometheus.Collector](reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: f.name, Help: f.help}, f.value))
		}
	}
	return m
}

// register registers c, or returns the collector already registered under
// its name (two servers on one registry share their metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// waitsCollector exposes the store's waits (store.Waits): where the
// command transactions' time goes.
type waitsCollector struct{ s *Server }

var (
	descTx = prometheus.NewDesc("kbkit_store_transactions_total",
		"Command transactions by path: optimistic (a group planned against cached page heads, one round trip), usual (a group that read heads first, two round trips), alone (the single-command path, each attempt).", []string{"path"}, nil)
	descTxCommands = prometheus.NewDesc("kbkit_store_transaction_commands_total",
		"Commands decided by those transactions, by path.", []string{"path"}, nil)
	descTxSeconds = prometheus.NewDesc("kbkit_store_transaction_seconds_total",
		"Time of those transactions, by path, from asking for a connection to COMMIT's answer, less the delivery of the group before's commands to this instance's subscribers, which runs once the transaction is sent.", []string{"path"}, nil)
	descTxSize = prometheus.NewDesc("kbkit_store_transaction_size",
		"Commands decided per committed transaction.", nil, nil)
	descPostgres = prometheus.NewDesc("kbkit_store_postgres_seconds_total",
		"The part of the transactions' time spent waiting for Postgres: a pooled connection, BEGIN's and COMMIT's round trips; the rest is planning and preparing the writes with the page held.", nil, nil)
	descQueued = prometheus.NewDesc("kbkit_store_queued_commands_total",
		"Commands that queued for their page (held by a running transaction) or for a transaction slot.", nil, nil)
	descQueue = prometheus.NewDesc("kbkit_store_queue_seconds_total",
		"Time those commands queued.", nil, nil)
	descHold = prometheus.NewDesc("kbkit_store_hold_seconds_total",
		"Time pages were held by command transactions of this instance's group scheduler, their gathering included.", nil, nil)
	descGather = prometheus.NewDesc("kbkit_store_gather_seconds_total",
		"The part of kbkit_store_hold_seconds_total a group spent waiting for its callers' next commands.", nil, nil)
)

func (waitsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTx, descTxCommands, descTxSeconds, descTxSize, descPostgres, descQueued, descQueue, descHold, descGather} {
		ch <- d
	}
}

func (c waitsCollector) Collect(ch chan<- prometheus.Metric) {
	w := c.s.st.Waits()
	for _, p := range []store.Path{store.PathOptimistic, store.PathUsual, store.PathAlone} {
		ch <- prometheus.MustNewConstMetric(descTx, prometheus.CounterValue, float64(w.Transactions[p]), p.String())
		ch <- prometheus.MustNewConstMetric(descTxCommands, prometheus.CounterValue, float64(w.Commands[p]), p.String())
		ch <- prometheus.MustNewConstMetric(descTxSeconds, prometheus.CounterValue, w.TxSeconds[p], p.String())
	}
	buckets := map[float64]uint64{}
	var count uint64
	var sum float64
	for i, n := range w.Sizes {
		count += uint64(n)
		if i < len(store.SizeBuckets) {
			buckets[float64(store.SizeBuckets[i])] = count
		}
	}
	for p := range w.Commands {
		sum += float64(w.Commands[p])
	}
	ch <- prometheus.MustNewConstHistogram(descTxSize, count, sum, buckets)
	ch <- prometheus.MustNewConstMetric(descPostgres, prometheus.CounterValue, w.PostgresSeconds)
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.CounterValue, float64(w.Queued))
	ch <- prometheus.MustNewConstMetric(descQueue, prometheus.CounterValue, w.QueueSeconds)
	ch <- prometheus.MustNewConstMetric(descHold, prometheus.CounterValue, w.HoldSeconds)
	ch <- prometheus.MustNewConstMetric(descGather, prometheus.CounterValue, w.GatherSeconds)
}
