package pgfault

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/subspace/kbkit/pgfault/netfault"
	"github.com/subspace/kbkit/server"
	"github.com/subspace/kbkit/server/store"
)

// AnswerBound is how long a kb.command may go unanswered while the link
// to Postgres is cut: the server's bound on a call's database work
// (server.DefaultDBTimeout, kbkit serve --db-timeout), plus a second of
// scheduling on a loaded machine. pgx closes a connection at once when
// the call's context ends (its deadline watcher), so no TCP timeout adds
// to it.
var AnswerBound = server.DefaultDBTimeout + time.Second

// faultLinks are the netfault proxies between the server instances and
// each Postgres host; dsn is the DSN through them. The run's own view of
// the database (the log read at the end) goes around them.
type faultLinks struct {
	dsn   string
	links []*netfault.Link
}

func newFaultLinks(dsn string) (*faultLinks, error) {
	hosts, err := netfault.Upstreams(dsn)
	if err != nil {
		return nil, err
	}
	f := &faultLinks{}
	m := map[string]*netfault.Link{}
	for _, h := range hosts {
		l, err := netfault.Listen(h)
		if err != nil {
			f.close()
			return nil, err
		}
		f.links = append(f.links, l)
		m[h] = l
	}
	if f.dsn, err = netfault.ThroughLinks(dsn, m); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *faultLinks) apply(fault netfault.Fault) error {
	for _, l := range f.links {
		if err := l.Apply(fault); err != nil {
			return err
		}
	}
	return nil
}

func (f *faultLinks) heal() {
	for _, l := range f.links {
		_ = l.Heal()
	}
}

func (f *faultLinks) close() {
	for _, l := range f.links {
		l.Close()
	}
}

// partition puts the configured fault on the links for Hold, heals them,
// and marks the heal as the moment recovery is measured from (the
// failover's promotion).
func (r *run) partition(ctx context.Context, links *faultLinks, db *store.Store) error {
	fault, err := netfault.Parse(r.cfg.Fault)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.faultAt = time.Now()
	r.mu.Unlock()
	if err := links.apply(fault); err != nil {
		return err
	}
	r.cfg.logf("partition: %s (%s) for %s", fault.Name, fault.Description, r.cfg.Hold)
	sleep(ctx, r.cfg.Hold)
	links.heal()
	healed := time.Now()
	r.mu.Lock()
	r.healAt = healed
	r.mu.Unlock()
	r.cfg.logf("partition: healed")
	r.promotedAt, r.heads = healed, r.readHeads(ctx, db)
	close(r.promoted)
	return ctx.Err()
}

// faultFigures adds what a link fault measures to res: the time from the
// fault to the first answer (a retryable error or a decision) of a call
// in flight then or made during it, and the longest such call, which must
// stay within AnswerBound.
func (r *run) faultFigures(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Fault, res.Hold = r.cfg.Fault, r.cfg.Hold.Seconds()
	res.FaultToFirstAnswer, res.LongestAnswer = -1, 0
	res.AnswerBound = AnswerBound.Seconds()
	for _, a := range r.answered {
		// Calls in flight when the fault began, or made during it.
		if !a.to.After(r.faultAt) || !a.from.Before(r.healAt) {
			continue
		}
		if d := a.to.Sub(r.faultAt).Seconds(); res.FaultToFirstAnswer < 0 || d < res.FaultToFirstAnswer {
			res.FaultToFirstAnswer = d
		}
		res.LongestAnswer = max(res.LongestAnswer, a.to.Sub(a.from).Seconds())
	}
	if res.FaultToFirstAnswer < 0 {
		res.Findings = append(res.Findings, "no call in flight during the fault was answered")
	}
	if res.LongestAnswer > res.AnswerBound {
		res.Findings = append(res.Findings, fmt.Sprintf("a call made during the fault took %.3f s to answer, more than the bound %.3f s", res.LongestAnswer, res.AnswerBound))
	}
}

// FaultTable prints one row per link fault.
func FaultTable(w io.Writer, results []*Result) {
	secs := func(v float64) string {
		if v < 0 {
			return "never"
		}
		return fmt.Sprintf("%.3f", v)
	}
	fmt.Fprintf(w, "%-11s %6s %5s %5s %5s %9s %10s %11s %9s %11s %10s  %s\n", "fault", "hold s", "acked", "lost", "dupl", "rejected",
		"1st answ s", "longest s", "bound s", "heal>commit", "heal>conv", "verdict")
	for _, r := range results {
		verdict := "PASS"
		if !r.OK() {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%-11s %6.1f %5d %5d %5d %9d %10s %11s %9.1f %11s %10s  %s\n", r.Fault, r.Hold, r.Acknowledged, r.Lost, r.Duplicated,
			r.Rejected+r.Refused, secs(r.FaultToFirstAnswer), secs(r.LongestAnswer), r.AnswerBound,
			secs(r.PromotionToFirstWrite), secs(r.PromotionToConverged), verdict)
	}
	for _, r := range results {
		for _, f := range r.Findings {
			fmt.Fprintf(w, "%s: %s\n", r.Fault, f)
		}
	}
}
