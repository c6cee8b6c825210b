package store

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/subspace/kbkit/pgfault/netfault"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/spec"
)

// withParams is dsn (postgres:// or keyword/value) with params set.
func withParams(t *testing.T, dsn string, params map[string]string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		for k, v := range params {
			dsn += fmt.Sprintf(" %s=%s", k, v) // a later keyword overrides
		}
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// storeThroughLinks opens a Store whose connections reach the test
// database through n netfault links (real TCP proxies), each a host of
// its DSN, with one connection at most and connect_timeout=1.
func storeThroughLinks(t *testing.T, n int) (*Store, []*netfault.Link) {
	t.Helper()
	dsn := withParams(t, pgprovider.ForTest(t), map[string]string{"pool_max_conns": "1", "connect_timeout": "1"})
	hosts, err := netfault.Upstreams(dsn)
	if err != nil || len(hosts) != 1 {
		t.Fatalf("hosts of %s: %v %v", dsn, hosts, err)
	}
	var links []*netfault.Link
	var addrs []string
	for range n {
		link, err := netfault.Listen(hosts[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(link.Close)
		links = append(links, link)
		addrs = append(addrs, link.Addr)
	}
	through, err := netfault.WithHosts(dsn, addrs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(context.Background(), through)
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the links (cleanups run last in, first out).
	t.Cleanup(st.Close)
	return st, links
}

// A connection given up on while the link is blackholed is closed within
// about twice closeBound (its cancel request, then its drain after
// Terminate), not after pgx's 15 s.
func TestGivenUpConnectionClosesWithinBound(t *testing.T) {
	st, links := storeThroughLinks(t, 1)
	link := links[0]
	ctx := context.Background()
	// A connection made with the Store's ConnConfig, as the LISTEN
	// connections are.
	conn, err := pgx.ConnectConfig(ctx, st.Pool().Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := link.Apply(netfault.Blackhole); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = link.Heal() }()
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = conn.Exec(qctx, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("a query through the blackhole succeeded")
	}
	gaveUp := time.Now()
	select {
	case <-conn.PgConn().CleanupDone():
		t.Logf("closed %.3f s after the query was given up", time.Since(gaveUp).Seconds())
	// Below pgx's own 15 s (what this bound replaces); the rest of the
	// margin is for a busy machine.
	case <-time.After(12 * time.Second):
		t.Fatalf("not closed %s after the query was given up (pgx alone waits 15 s)", time.Since(gaveUp))
	}
}

// The pool slot of a connection given up on in a partition is free again
// within about twice closeBound: with one connection in the pool and its
// host cut off for good, a call is served from the DSN's next host.
func TestGivenUpConnectionFreesItsSlot(t *testing.T) {
	st, links := storeThroughLinks(t, 2)
	ctx := context.Background()
	var one int
	if err := st.Pool().QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	if err := links[0].Apply(netfault.Blackhole); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := st.Pool().QueryRow(qctx, "SELECT 1").Scan(&one)
	cancel()
	if err == nil {
		t.Fatal("a query through the blackhole succeeded")
	}
	gaveUp := time.Now()
	// The slot, then a connection attempt to the first host (1 s), then
	// the second host.
	actx, cancel := context.WithTimeout(ctx, 2*closeBound+3*time.Second)
	defer cancel()
	if err := st.Pool().QueryRow(actx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("%s after the query was given up, the pool's one slot is still taken (pgx alone waits 15 s): %v", time.Since(gaveUp), err)
	}
	t.Logf("served %.3f s after the query was given up", time.Since(gaveUp).Seconds())
}

func TestIsCancelRequest(t *testing.T) {
	b := []byte{0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e, 0, 0, 1, 2, 9, 9, 9, 9}
	if !isCancelRequest(b) {
		t.Fatal("a CancelRequest was not recognised")
	}
	if isCancelRequest(b[:15]) || isCancelRequest(append([]byte{}, append(b, 0)...)) {
		t.Fatal("a cut or padded CancelRequest was recognised")
	}
	ssl := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	if isCancelRequest(ssl) {
		t.Fatal("an SSLRequest was recognised")
	}
}

// spec/PROTOCOL.md section 6.1 states the reference server's bound on a
// given-up connection's close; it is closeBound.
func TestSpecStatesCloseBound(t *testing.T) {
	b, err := fs.ReadFile(spec.FS, "PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	m := regexp.MustCompile(`bounds each wait by (\d+) s`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`spec/PROTOCOL.md no longer says "bounds each wait by N s"`)
	}
	if want := strconv.Itoa(int(closeBound / time.Second)); m[1] != want {
		t.Errorf("spec/PROTOCOL.md says each wait is bounded by %s s; closeBound is %v", m[1], closeBound)
	}
}
