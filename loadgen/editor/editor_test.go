package editor

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/loadgen/plan"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// TestErrorKind: one classification of a command's failure for every
// driver, on real errors: a socket read past its deadline and a context
// past its deadline are timeouts, a refused connection is network.
func TestErrorKind(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(time.Second)
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, readErr := conn.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(readErr, &ne) || !ne.Timeout() || errors.Is(readErr, context.DeadlineExceeded) {
		t.Fatalf("the read past its deadline: %v, want a net.Error that timed out", readErr)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	_, refused := net.Dial("tcp", addr)
	if refused == nil {
		t.Fatal("dialled a closed port")
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	canceled, stop := context.WithCancel(context.Background())
	stop()

	for _, c := range []struct {
		err  error
		want string
	}{
		{readErr, "timeout"},
		{&net.OpError{Op: "read", Net: "tcp", Err: readErr}, "timeout"},
		{ctx.Err(), "timeout"},
		{refused, "network"},
		{canceled.Err(), "canceled"},
		{&client.Error{Code: "UNAVAILABLE", HTTPStatus: 503}, "UNAVAILABLE"},
		{errors.New("unexpected EOF"), "network"},
	} {
		if got := ErrorKind(c.err); got != c.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// serve starts the reference server, pairs n devices and creates a page
// (as the plan of a run does); it returns the devices' clients and ids and
// the page.
func serve(t *testing.T, n int) ([]*client.Client, []string, string) {
	t.Helper()
	ctx := context.Background()
	e, err := target.NewEmbedded(ctx, pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tokens, err := e.Devices(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	var cs []*client.Client
	var devs []string
	for _, tok := range tokens {
		c := client.New(e.Endpoints()[0], tok)
		me, err := c.Whoami(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs, devs = append(cs, c), append(devs, me.DeviceID)
	}
	p := plan.Plan{RunID: uuid.NewString(), Editors: 1, Pages: 1, PerPage: 1}
	if err := p.CreatePage(ctx, cs[0], devs[0], 0); err != nil {
		t.Fatal(err)
	}
	return cs, devs, p.PageID(0)
}

// taps keeps the samples of a window.
type taps struct {
	mu  sync.Mutex
	all []Sample
}

func (tp *taps) tap(s Sample) { tp.mu.Lock(); tp.all = append(tp.all, s); tp.mu.Unlock() }

func (tp *taps) named(name string) []Sample {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []Sample
	for _, s := range tp.all {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestMeasuredEditor: two measured windows of a page on the reference
// server: a committed command is measured at its window (commit, echo)
// and at the other (fan-out), a rename sets the page's title, a
// rejection and a refusal are counted as such, and both windows converge
// to one document.
func TestMeasuredEditor(t *testing.T) {
	ctx := context.Background()
	cs, _, page := serve(t, 2)
	s := NewSession()
	recs := []*metrics.Recorder{metrics.NewRecorder(), metrics.NewRecorder()}
	tps := []*taps{{}, {}}
	var ws []*Window
	for i, c := range cs {
		w, err := s.Open(ctx, c, page, Options{Recorder: recs[i], Tap: tps[i].tap, Workload: "open", Data: i})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	if got := s.Windows(); len(got) != 2 || got[1].Data() != 1 {
		t.Fatalf("session windows %v", got)
	}
	cmd := func(typ string, payload any) func(kbcore.Doc) kbcore.Command {
		b, _ := json.Marshal(payload)
		id := uuid.NewString()
		return func(kbcore.Doc) kbcore.Command { return kbcore.Command{ID: id, Type: typ, Payload: b} }
	}
	start := time.Now()
	out := ws[0].Local(ctx, "test", start, cmd(kbcore.TypeCreateAfter, map[string]any{"text": "hello"}))
	if !out.Committed || out.Seq != 2 || out.Type != kbcore.TypeCreateAfter {
		t.Fatalf("create-after: %+v", out)
	}
	node := out.ID
	out = ws[0].Local(ctx, "test", time.Now(), cmd(kbcore.TypeRenamePage, map[string]any{"title": "renamed"}))
	if !out.Committed {
		t.Fatalf("rename: %+v", out)
	}
	if titles := s.Titles(); len(titles) != 1 || titles[0] != "renamed" {
		t.Fatalf("titles %q", titles)
	}
	// Refused by the window: the reducer rejects an edit of no node.
	out = ws[1].Local(ctx, "test", time.Now(), cmd(kbcore.TypeEditText, map[string]any{"node": "nowhere", "text": "x"}))
	if out.Committed || out.Refused == "" {
		t.Fatalf("edit of no node: %+v", out)
	}
	for _, w := range ws {
		if err := w.Converge(time.Now(), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// Rejected by the server: window 1 edits the node window 0 deleted,
	// before it applied the deletion.
	env, _, ok := ws[1].Client().Local(func(kbcore.Doc) kbcore.Command {
		return cmd(kbcore.TypeEditText, map[string]any{"node": node, "text": "late"})(kbcore.Doc{})
	})
	if !ok {
		t.Fatal("window 1 refused the edit")
	}
	if out := ws[0].Local(ctx, "test", time.Now(), cmd(kbcore.TypeDelete, map[string]any{"node": node})); !out.Committed {
		t.Fatalf("delete: %+v", out)
	}
	out = ws[1].send(ctx, "late", env, time.Now(), true)
	if out.Rejected == "" || out.Committed {
		t.Fatalf("edit of a deleted node: %+v", out)
	}
	for _, w := range ws {
		if err := w.Converge(time.Now(), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Diverged(); n != 0 {
		t.Fatalf("%d windows diverged", n)
	}

	r0, err := metrics.Collect(recs[:1])
	if err != nil {
		t.Fatal(err)
	}
	r1, err := metrics.Collect(recs[1:])
	if err != nil {
		t.Fatal(err)
	}
	if r0.Counts.Committed != 3 || r0.Hist(metrics.Commit).Count() != 3 || r0.Hist(metrics.Echo).Count() != 3 || r0.Hist(metrics.Fanout).Count() != 0 {
		t.Errorf("window 0: %+v, commit %d, echo %d, fan-out %d", r0.Counts, r0.Hist(metrics.Commit).Count(), r0.Hist(metrics.Echo).Count(), r0.Hist(metrics.Fanout).Count())
	}
	if r1.Counts.Committed != 0 || r1.Counts.Rejections != 1 || r1.Counts.LocalRejections != 1 || r1.Hist(metrics.Fanout).Count() != 3 {
		t.Errorf("window 1: %+v, fan-out %d", r1.Counts, r1.Hist(metrics.Fanout).Count())
	}
	if got := r0.Types[kbcore.TypeCreateAfter]; got == nil || got.Counts.Committed != 1 {
		t.Errorf("create-after counts %+v", got)
	}
	commits := tps[0].named(metrics.Commit)
	if len(commits) != 3 || commits[0].Workload != "test" || commits[0].Type != kbcore.TypeCreateAfter || commits[0].Latency <= 0 {
		t.Errorf("commit samples %+v", commits)
	}
	fan := tps[1].named(metrics.Fanout)
	if len(fan) != 3 || fan[0].Origin != ws[0] {
		t.Errorf("fan-out samples %+v", fan)
	}
	if rej := tps[1].named(Rejection); len(rej) != 1 || rej[0].Code == "" || rej[0].Workload != "late" {
		t.Errorf("rejection samples %+v", rej)
	}
	if conv := tps[1].named(metrics.Convergence); len(conv) != 2 {
		t.Errorf("convergence samples %+v", conv)
	}
}

// TestNotMeasured: what starts while the session does not measure (a
// warm-up) is neither recorded nor tapped.
func TestNotMeasured(t *testing.T) {
	ctx := context.Background()
	cs, devs, page := serve(t, 1)
	s := NewSession()
	s.SetMeasuring(false)
	rec := metrics.NewRecorder()
	tp := &taps{}
	w, err := s.Open(ctx, cs[0], page, Options{DeviceID: devs[0], Recorder: rec, Tap: tp.tap})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out := w.Local(ctx, "warm", time.Now(), func(kbcore.Doc) kbcore.Command {
		b, _ := json.Marshal(map[string]any{"text": "x"})
		return kbcore.Command{ID: uuid.NewString(), Type: kbcore.TypeCreateAfter, Payload: b}
	})
	if !out.Committed {
		t.Fatalf("%+v", out)
	}
	if err := w.Converge(time.Now(), time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	res, err := metrics.Collect([]*metrics.Recorder{rec})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Commands != 0 || res.Counts.Committed != 0 || res.Counts.Echoes != 0 || res.Hist(metrics.Commit).Count() != 0 {
		t.Errorf("a warm-up command was recorded: %+v", res.Counts)
	}
	if n := len(tp.named(metrics.Commit)) + len(tp.named(metrics.Echo)); n != 0 {
		t.Errorf("%d samples of a warm-up command tapped", n)
	}
}
