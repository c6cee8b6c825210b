package pgfault

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/internal/procs"
	"github.com/subspace/kbkit/pgfault/netfault"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

// MaxGrowth is how much a soak series may grow after the warm-up (judge):
// a memory series, its trend line at the last healthy sample over the
// line at the first; a count (goroutines, sockets, descriptors), the
// median of its last quarter over that of its first; at most 10 % more.
// A count grows only if its floor does too, the least of its last quarter
// CountSlack or more above the least of its first: work in flight lifts
// a sample here and there (the server's goroutines went 24, 30, 24, 32 in
// a CI soak's healthy samples), a leak lifts them all.
//
// MinTrendSamples is the fewest healthy samples after the warm-up that a
// verdict on growth is judged on: with fewer (a run too short for its
// --sample, or a machine that starved the sampler) a Go process's
// memory, which rises and falls with each collection, cannot be told
// from a leak, and the soak reports its growth as not measurable here
// instead of judging noise.
//
// MinWarmup is the shortest default warm-up: the generator's memory rises
// for its first 20 s or so as its heap reaches its working size (a 60 s
// soak with a 12 s warm-up judged the end of that rise as growth).
const (
	MaxGrowth       = 0.10
	CountSlack      = 4
	MinTrendSamples = 15
	MinWarmup       = 20 * time.Second
)

func (c *Config) soakDefaults() error {
	if c.ServerBinary == "" {
		return errors.New("failover: a soak needs the server binary (it runs as a process of its own)")
	}
	if len(c.Faults) == 0 {
		c.Faults = netfault.Names()
	}
	for _, f := range c.Faults {
		if _, err := netfault.Parse(f); err != nil {
			return err
		}
	}
	c.Fault = c.Faults[0]
	if c.Topology == "" {
		c.Topology = pgprovider.TopologySingle
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Gap, 20*time.Second)
	def(&c.SampleEvery, time.Second)
	def(&c.AuditEvery, 20*time.Second)
	def(&c.Warmup, max(c.Soak/5, MinWarmup))
	if c.MaxNodes == 0 {
		c.MaxNodes = 12
	}
	c.Instances = 1
	return nil
}

// ---- the server as a process of its own ----

// serverProcess is `kbkit serve` on a free loopback port; it is a Target
// whose devices are paired in the database directly.
type serverProcess struct {
	cmd    *exec.Cmd
	url    string
	db     *store.Store
	exited chan struct{}
	stderr *tailBuffer
}

func startServerProcess(ctx context.Context, bin, dsn string, db *store.Store) (*serverProcess, error) {
	cmd := exec.Command(bin, "serve", "--dsn", dsn, "--addr", "127.0.0.1:0", "--log-level", "error", "--workspace", "soak")
	procs.OwnGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &serverProcess{cmd: cmd, db: db, exited: make(chan struct{}), stderr: &tailBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("failover: start %s serve: %w", bin, err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		l, _ := r.ReadString('\n')
		line <- l
		_, _ = io.Copy(io.Discard, r)
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	var info struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(l), &info); err != nil || info.URL == "" {
		p.stop()
		return nil, fmt.Errorf("failover: %s serve printed no JSON line with its URL (%q); stderr:\n%s", bin, l, p.stderr.String())
	}
	p.url = info.URL
	return p, nil
}

func (p *serverProcess) pid() int { return p.cmd.Process.Pid }

// stop ends the server (SIGTERM, then SIGKILL of its group after 10 s).
func (p *serverProcess) stop() {
	procs.TermGroup(p.pid())
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		procs.KillGroup(p.pid())
		<-p.exited
	}
}

func (p *serverProcess) Endpoints() []string { return []string{p.url} }

func (p *serverProcess) Devices(ctx context.Context, n int) ([]string, error) {
	ws := "soak-" + uuid.NewString()
	var out []string
	for range n {
		var d store.PairedDevice
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			if d, err = p.db.PairDevice(ctx, ws); err == nil || !store.IsRetryable(err) {
				break
			}
			sleep(ctx, 100*time.Millisecond)
		}
		if err != nil {
			return nil, fmt.Errorf("failover: pair device: %w", err)
		}
		out = append(out, d.Token)
	}
	return out, nil
}

// tailBuffer keeps the last 8 KB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = t.b[len(t.b)-8<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// ---- faults, one after another ----

// soakFaults runs the faults in turn, each for Hold after Gap of a healthy
// link, until Soak has passed; the last heal is what recovery is measured
// from.
func (r *run) soakFaults(ctx context.Context, links *faultLinks, db *store.Store) error {
	cfg := r.cfg
	end := time.Now().Add(cfg.Soak)
	for i := 0; ; i++ {
		sleep(ctx, cfg.Gap)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().Add(cfg.Hold).After(end) {
			break
		}
		f, _ := netfault.Parse(cfg.Faults[i%len(cfg.Faults)])
		r.mu.Lock()
		r.soak.faultOn = true
		r.mu.Unlock()
		if err := links.apply(f); err != nil {
			return err
		}
		cfg.logf("soak: %s for %s", f.Name, cfg.Hold)
		sleep(ctx, cfg.Hold)
		links.heal()
		r.mu.Lock()
		r.soak.faults++
		r.soak.faultOn, r.soak.quietFrom = false, time.Now().Add(settleAfterHeal)
		r.mu.Unlock()
	}
	healed := time.Now()
	r.promotedAt, r.heads = healed, r.readHeads(ctx, db)
	close(r.promoted)
	return nil
}

// ---- samples and audits ----

// ProcSample is what one process held at a moment.
type ProcSample struct {
	RSS        int64 `json:"rss_bytes"`
	Goroutines int   `json:"goroutines"`
	FDs        int   `json:"fds"`
	Sockets    int   `json:"sockets"`
}

// Sample is one moment of a soak, in seconds from the load's start.
type Sample struct {
	At float64 `json:"at_s"`
	// Fault: taken during a fault or within settleAfterHeal of its heal
	// (plotted, not judged).
	Fault     bool       `json:"fault,omitempty"`
	Server    ProcSample `json:"server"`
	Generator ProcSample `json:"generator"`
}

// Series is the verdict on one sampled figure.
type Series struct {
	Name string `json:"name"`
	// Start and End: the first and the last sample; First and Last: the
	// trend line through the healthy samples after the warm-up (judge),
	// at the first of them and at the last.
	Start  float64 `json:"start"`
	End    float64 `json:"end"`
	First  float64 `json:"trend_first"`
	Last   float64 `json:"trend_last"`
	Growth float64 `json:"growth"`
	OK     bool    `json:"ok"`
}

// SoakFigures is what a soak adds to a Result.
type SoakFigures struct {
	Duration float64  `json:"duration_s"`
	Warmup   float64  `json:"warmup_s"`
	Faults   int      `json:"faults"`
	Audits   int      `json:"audits"`
	Samples  []Sample `json:"samples"`
	// Judged is how many samples the verdicts on growth were judged on
	// (healthy, after the warm-up); NotMeasurable, why there are none
	// (Series is then empty).
	Judged        int      `json:"judged_samples"`
	NotMeasurable string   `json:"not_measurable,omitempty"`
	Series        []Series `json:"series"`
}

// settleAfterHeal: samples this soon after a heal are not judged (the
// reconnections of a fault are not a leak).
const settleAfterHeal = 5 * time.Second

// soakState is kept in run.soak.
type soakState struct {
	faultOn                              bool
	quietFrom                            time.Time
	faults, audits                       int
	acked, found, lost, misplaced, dupls int
	reused                               int
	samples                              []Sample
}

// soakWatch samples the server process and this one every SampleEvery
// and audits what was acknowledged every AuditEvery, until the returned
// stop is called; stop adds the figures and findings to the result.
func (r *run) soakWatch(ctx context.Context, proc *serverProcess, db *store.Store) func(*Result) {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.cfg.SampleEvery)
		defer t.Stop()
		for {
			r.sample(proc)
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
		}
	})
	wg.Go(func() {
		t := time.NewTicker(r.cfg.AuditEvery)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			if err := r.audit(wctx, db); err != nil && wctx.Err() == nil {
				r.cfg.logf("soak: audit: %v (retried at the next)", err)
			}
			for _, w := range r.writers {
				w.requestReopen()
			}
		}
	})
	return func(res *Result) {
		cancel()
		wg.Wait()
		if res != nil {
			r.soakResult(res)
		}
	}
}

func (r *run) sample(proc *serverProcess) {
	s := Sample{At: time.Since(r.begin).Seconds()}
	if u, err := procs.UsageOf(proc.pid()); err == nil {
		s.Server = ProcSample{RSS: u.RSS, FDs: u.FDs, Sockets: u.Sockets, Goroutines: scrapeGoroutines(proc.url)}
	}
	if u, err := procs.UsageOf(os.Getpid()); err == nil {
		s.Generator = ProcSample{RSS: u.RSS, FDs: u.FDs, Sockets: u.Sockets, Goroutines: runtime.NumGoroutine()}
	}
	r.mu.Lock()
	s.Fault = r.soak.faultOn || time.Now().Before(r.soak.quietFrom)
	r.soak.samples = append(r.soak.samples, s)
	r.mu.Unlock()
}

// scrapeGoroutines reads go_goroutines from the server's /metrics (-1 if
// it cannot).
func scrapeGoroutines(base string) int {
	c := http.Client{Timeout: 2 * time.Second}
	res, err := c.Get(base + "/metrics")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(n)
			}
		}
	}
	return -1
}

// audit checks the commands acknowledged more than a second ago against
// the log (at the seq of their answer) and the slots clients were told
// of, then forgets them: a long run's bookkeeping stays bounded.
func (r *run) audit(ctx context.Context, db *store.Store) error {
	cutoff := time.Now().Add(-time.Second)
	r.mu.Lock()
	acks := map[string]ack{}
	dupl := 0
	for id, a := range r.acks {
		if a.at.Before(cutoff) {
			acks[id] = a
			if len(r.ackSeqs[id]) > 1 {
				dupl++
			}
		}
	}
	seen := map[slot]string{}
	for s, id := range r.seen {
		if _, ok := acks[id]; ok && !r.reused[s] {
			seen[s] = id
		}
	}
	if len(acks) == 0 {
		r.soak.audits++
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	ids := make([]string, 0, len(acks))
	for id := range acks {
		ids = append(ids, id)
	}
	pages := map[string]bool{}
	for _, a := range acks {
		pages[a.page] = true
	}
	pageIDs := make([]string, 0, len(pages))
	for p := range pages {
		pageIDs = append(pageIDs, p)
	}
	// By the log's key (workspace, id): by id alone Postgres scans the
	// whole log for each audit, and a long run's audits grow slower than
	// AuditEvery. Bounded: an audit that cannot finish is retried at the
	// next, and counted as missed.
	actx, cancel := context.WithTimeout(ctx, r.cfg.AuditEvery)
	defer cancel()
	rows, err := db.Pool().Query(actx, `SELECT id::text, page_id::text, seq FROM command_log
		WHERE workspace_id IN (SELECT workspace_id FROM pages WHERE id = ANY($2::uuid[]))
		AND id = ANY($1::uuid[]) AND outcome = 'committed'`, ids, pageIDs)
	if err != nil {
		return err
	}
	logged := map[string]slot{}
	for rows.Next() {
		var id string
		var s slot
		if err := rows.Scan(&id, &s.page, &s.seq); err != nil {
			rows.Close()
			return err
		}
		logged[id] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.soak
	st.audits++
	for id, a := range acks {
		st.acked++
		switch s, ok := logged[id]; {
		case !ok:
			st.lost++
			r.cfg.logf("soak: acknowledged %s (page %s seq %d) is not in the log", short(id), short(a.page), a.seq)
		case s != slot{a.page, a.seq}:
			st.misplaced++
		default:
			st.found++
		}
		delete(r.acks, id)
		delete(r.ackSeqs, id)
	}
	st.dupls += dupl
	for s, id := range seen {
		if logged[id] != s {
			st.reused++
		}
		delete(r.seen, s)
	}
	r.ackTimes = r.ackTimes[:0]
	r.answered = r.answered[:0]
	return nil
}

// soakResult adds the audited figures, the samples and their verdicts.
func (r *run) soakResult(res *Result) {
	r.mu.Lock()
	st := r.soak
	samples := append([]Sample(nil), st.samples...)
	r.mu.Unlock()
	res.Acknowledged += st.acked
	res.Found += st.found
	res.Lost += st.lost
	res.Misplaced += st.misplaced
	res.Duplicated += st.dupls
	res.SeqReused += st.reused
	if st.lost > 0 {
		res.Findings = append(res.Findings, fmt.Sprintf("%d acknowledged commands are not in the log (audits)", st.lost))
	}
	if st.misplaced > 0 || st.dupls > 0 || st.reused > 0 {
		res.Findings = append(res.Findings, fmt.Sprintf("audits: %d misplaced, %d duplicated, %d seqs reused", st.misplaced, st.dupls, st.reused))
	}
	// Every acknowledged command is checked by an audit and then
	// forgotten: a run whose audits did not keep up checked less than it
	// acknowledged, and its bookkeeping grew.
	if want := int(r.cfg.Soak / r.cfg.AuditEvery); st.audits < want-1 {
		res.Findings = append(res.Findings, fmt.Sprintf("only %d of %d audits finished (one every %s)", st.audits, want, r.cfg.AuditEvery))
	}
	f := &SoakFigures{Duration: r.cfg.Soak.Seconds(), Warmup: r.cfg.Warmup.Seconds(), Faults: st.faults, Audits: st.audits, Samples: samples}
	f.Series, f.Judged, f.NotMeasurable = judge(samples, r.cfg.Warmup.Seconds(), r.cfg.Soak.Seconds(), r.cfg.SampleEvery.Seconds())
	for _, s := range f.Series {
		if !s.OK {
			res.Findings = append(res.Findings, fmt.Sprintf("%s grew by %.1f %% after the warm-up (trend %.0f, then %.0f, over %d samples): more than %.0f %%",
				s.Name, 100*s.Growth, s.First, s.Last, f.Judged, 100*MaxGrowth))
		}
	}
	res.Soak = f
}

// seriesOf names the sampled figures and how to read each.
var seriesOf = []struct {
	name  string
	count bool
	get   func(Sample) float64
}{
	{"server RSS bytes", false, func(s Sample) float64 { return float64(s.Server.RSS) }},
	{"server goroutines", true, func(s Sample) float64 { return float64(s.Server.Goroutines) }},
	{"server sockets", true, func(s Sample) float64 { return float64(s.Server.Sockets) }},
	{"server fds", true, func(s Sample) float64 { return float64(s.Server.FDs) }},
	{"generator RSS bytes", false, func(s Sample) float64 { return float64(s.Generator.RSS) }},
	{"generator goroutines", true, func(s Sample) float64 { return float64(s.Generator.Goroutines) }},
	{"generator sockets", true, func(s Sample) float64 { return float64(s.Generator.Sockets) }},
	{"generator fds", true, func(s Sample) float64 { return float64(s.Generator.FDs) }},
}

// judge fits, for each memory series, a trend line through the healthy
// samples after the warm-up and before the load's end (the convergence
// and the last audit after it are other work: plotted, not judged), and compares the line at the last of them
// with the line at the first; a count's first and last quarters are
// compared (their medians, and their floors). The line is Theil-Sen's: the median of the slopes
// between every two samples, through the median of the samples less that
// slope, so that a collection's drop or a burst of work in flight moves
// it little; a leak moves every later sample up, and the line with them.
// It answers no series, with the reason, when the samples cannot tell a
// leak from noise: fewer than MinTrendSamples healthy ones after the
// warm-up, or a sampler the machine starved (a quarter of its samples
// taken more than twice the interval late: the process being judged was
// starved as much).
func judge(samples []Sample, warmup, end, every float64) (series []Series, judged int, notMeasurable string) {
	var after []Sample
	late := 0
	for i, s := range samples {
		if i > 0 && every > 0 && s.At-samples[i-1].At > 3*every {
			late++
		}
		if s.At >= warmup && s.At <= end && !s.Fault {
			after = append(after, s)
		}
	}
	if n := len(samples) - 1; n > 0 && 4*late >= n {
		return nil, 0, fmt.Sprintf("the machine starved the soak: %d of %d samples came more than twice their interval (%gs) late", late, n, every)
	}
	if len(after) < MinTrendSamples {
		return nil, 0, fmt.Sprintf("%d healthy samples after the warm-up, fewer than the %d a trend needs: sample more often (--sample) or run longer (--duration)",
			len(after), MinTrendSamples)
	}
	q := len(after) / 4
	var out []Series
	for _, sr := range seriesOf {
		vals := func(ss []Sample) []float64 {
			v := make([]float64, len(ss))
			for i, s := range ss {
				v[i] = sr.get(s)
			}
			return v
		}
		s := Series{Name: sr.name, Start: sr.get(samples[0]), End: sr.get(samples[len(samples)-1])}
		if sr.count {
			// A count steps (a goroutine leaked at each fault stays):
			// the medians of the first and last quarter.
			s.First, s.Last = median(vals(after[:q])), median(vals(after[len(after)-q:]))
		} else {
			_, at := trend(after, sr.get)
			s.First, s.Last = at(after[0].At), at(after[len(after)-1].At)
		}
		if s.First > 0 {
			s.Growth = (s.Last - s.First) / s.First
		}
		s.OK = s.Growth <= MaxGrowth || (sr.count && slices.Min(vals(after[len(after)-q:]))-slices.Min(vals(after[:q])) < CountSlack)
		out = append(out, s)
	}
	return out, len(after), ""
}

// maxTrendPoints bounds the samples a trend is fitted on (evenly spaced):
// the pairs of a 30-minute soak sampled every second would be millions.
const maxTrendPoints = 400

// trend is the Theil-Sen line through the samples' get: its slope per
// second and its value at a time.
func trend(ss []Sample, get func(Sample) float64) (float64, func(float64) float64) {
	if len(ss) > maxTrendPoints {
		thin := make([]Sample, maxTrendPoints)
		for i := range thin {
			thin[i] = ss[i*(len(ss)-1)/(maxTrendPoints-1)]
		}
		ss = thin
	}
	var slopes []float64
	for i := range ss {
		for j := i + 1; j < len(ss); j++ {
			if dt := ss[j].At - ss[i].At; dt > 0 {
				slopes = append(slopes, (get(ss[j])-get(ss[i]))/dt)
			}
		}
	}
	slope := median(slopes)
	rest := make([]float64, len(ss))
	for i, s := range ss {
		rest[i] = get(s) - slope*s.At
	}
	icpt := median(rest)
	return slope, func(t float64) float64 { return icpt + slope*t }
}

func median(v []float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}
