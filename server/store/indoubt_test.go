package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/server/pgprovider"
)

// cutter is a TCP proxy in front of Postgres that, once armed, cuts the
// connection on which the server answers a COMMIT (its CommandComplete
// "COMMIT" tag) before that answer reaches the client: the transaction
// committed, and the client does not know it. This is what a client of a
// primary lost right after a commit (or of a broken link) sees.
type cutter struct {
	ln    net.Listener
	to    string
	armed atomic.Bool
	cuts  atomic.Int64
	wg    sync.WaitGroup
}

func startCutter(t *testing.T, to string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, to: to}
	c.wg.Add(1)
	go c.accept()
	t.Cleanup(func() { ln.Close(); c.wg.Wait() })
	return c
}

func (c *cutter) accept() {
	defer c.wg.Done()
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", c.to)
		if err != nil {
			client.Close()
			continue
		}
		c.wg.Add(2)
		go func() { defer c.wg.Done(); _, _ = io.Copy(server, client); server.Close() }()
		go func() { defer c.wg.Done(); c.answers(client, server); client.Close() }()
	}
}

// commitTag is the CommandComplete of a COMMIT: tag "COMMIT" and its NUL.
var commitTag = []byte("COMMIT\x00")

// answers copies the server's messages to the client until, armed, it
// sees a COMMIT's CommandComplete: then it closes both sides without
// passing that answer on.
func (c *cutter) answers(client, server net.Conn) {
	defer server.Close()
	buf := make([]byte, 64<<10)
	var tail []byte // the end of the previous read: a tag split across reads
	for {
		n, err := server.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			if bytes.Contains(seen, commitTag) && c.armed.CompareAndSwap(true, false) {
				c.cuts.Add(1)
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
			tail = append(tail[:0], seen[max(0, len(seen)-len(commitTag)):]...)
		}
		if err != nil {
			return
		}
	}
}

// proxiedStore opens a store whose connections go through a cutter.
func proxiedStore(t *testing.T) (*Store, *cutter) {
	t.Helper()
	dsn := pgprovider.ForTest(t)
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("ForTest DSN %q is not a URL with a host (%v)", dsn, err)
	}
	c := startCutter(t, u.Host)
	u.Host = c.ln.Addr().String()
	st, err := Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, c
}

// A command whose COMMIT went through but whose answer was lost is
// retried by the store, which finds it decided: by this very call. The
// client posted it once, so it is answered as committed at its seq, not
// as a duplicate; a real retry of the id afterwards is the duplicate.
func TestCommitAnswerLostIsNotADuplicate(t *testing.T) {
	st, cut := proxiedStore(t)
	ctx := context.Background()
	pd, err := st.PairDevice(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	dev := pd.Device
	pageID := "00000000-0000-4000-8000-00000000c0de"
	mustSubmit(t, st, dev, env(pageID, "create-page", map[string]any{"title": "Cut"}))
	for i, e := range []kbcore.Envelope{
		env(pageID, "create-after", map[string]any{"text": "one", "node": "n1"}),
		env(pageID, "indent", map[string]any{"node": "n1"}), // rejected: the log row of a rejection is committed too
	} {
		e.DeviceID = dev.DeviceID
		cut.armed.Store(true)
		out, err := st.Submit(ctx, dev, e)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if cut.cuts.Load() != int64(i+1) {
			t.Fatalf("%s: the COMMIT's answer was not cut (%d cuts): the test proves nothing", e.Type, cut.cuts.Load())
		}
		if out.Duplicate {
			t.Fatalf("%s posted once, its commit's answer lost: answered %+v with Duplicate", e.Type, out)
		}
		if i == 0 && out.Seq != 2 || i == 1 && out.Rejected == nil {
			t.Fatalf("%s: outcome %+v", e.Type, out)
		}
		again, err := st.Submit(ctx, dev, e)
		if err != nil || !again.Duplicate || again.Seq != out.Seq || (again.Rejected == nil) != (out.Rejected == nil) {
			t.Fatalf("%s: a real retry answered %+v, %v (want the outcome %+v as a duplicate)", e.Type, again, err, out)
		}
	}
	entries, err := st.Log(ctx, pageID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1].Seq != 2 {
		t.Fatalf("log %+v, want create-page and create-after at seqs 1, 2", entries)
	}
}

// The same for a group transaction: its COMMIT's answer is lost, each of
// its commands is then decided alone and finds itself committed; none is
// answered as a duplicate, each id is in the log once, the seqs run 1..n.
func TestGroupCommitAnswerLostIsNotADuplicate(t *testing.T) {
	st, cut := proxiedStore(t)
	ctx := context.Background()
	pd, err := st.PairDevice(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	dev := pd.Device
	pageID := "00000000-0000-4000-8000-00000000c0df"
	mustSubmit(t, st, dev, env(pageID, "create-page", map[string]any{"title": "Cut group"}))
	mustSubmit(t, st, dev, env(pageID, "create-after", map[string]any{"text": "", "node": "n"}))
	var hooked atomic.Int64
	st.groupHook = func(n int, _ *pgx.Batch) error {
		if n >= 2 && hooked.Add(1) == 1 {
			cut.armed.Store(true) // the next COMMIT on the page is this group's
		}
		return nil
	}
	const writers = 8
	seqs := map[int64]bool{}
	for round := 0; round < 50 && cut.cuts.Load() == 0; round++ {
		var wg sync.WaitGroup
		outs := make([]Outcome, writers)
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				e := env(pageID, "edit-text", map[string]any{"node": "n", "text": fmt.Sprintf("r%d w%d", round, w)})
				e.DeviceID = dev.DeviceID
				outs[w], errs[w] = st.Submit(ctx, dev, e)
			})
		}
		wg.Wait()
		for w := range writers {
			switch {
			case errs[w] != nil:
				t.Fatalf("round %d writer %d: %v", round, w, errs[w])
			case outs[w].Duplicate:
				t.Fatalf("round %d writer %d posted once, answered %+v with Duplicate (cuts %d)", round, w, outs[w], cut.cuts.Load())
			case seqs[outs[w].Seq]:
				t.Fatalf("seq %d answered twice", outs[w].Seq)
			}
			seqs[outs[w].Seq] = true
		}
	}
	if cut.cuts.Load() == 0 {
		t.Fatal("no group transaction formed and was cut in 50 rounds: the test proves nothing")
	}
	entries, err := st.Log(ctx, pageID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i, e := range entries {
		if e.Seq != int64(i+1) || ids[e.Cmd.ID] {
			t.Fatalf("log entry %d: seq %d id %s (seen before: %v)", i, e.Seq, e.Cmd.ID, ids[e.Cmd.ID])
		}
		ids[e.Cmd.ID] = true
	}
	if want := 2 + len(seqs); len(entries) != want {
		t.Fatalf("%d log entries, want %d", len(entries), want)
	}
}

// Only an ERROR answering the commit says it rolled back; a FATAL (the
// backend terminated by a shutdown after the commit went through) or a
// lost connection leaves it in doubt.
func TestCommitFailedClassification(t *testing.T) {
	cases := []struct {
		raw   error
		doubt bool
	}{
		{&pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"}, false},
		{&pgconn.PgError{Severity: "FEHLER", SeverityUnlocalized: "ERROR", Code: "23505"}, false},
		{&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, true},
		{&pgconn.PgError{Severity: "PANIC", Code: "XX000"}, true},
		{fmt.Errorf("wrapped: %w", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}), true},
		{io.ErrUnexpectedEOF, true},
	}
	for _, c := range cases {
		if got := inDoubt(commitFailed(c.raw, c.raw)); got != c.doubt {
			t.Errorf("commitFailed(%v): in doubt %v, want %v", c.raw, got, c.doubt)
		}
	}
}
