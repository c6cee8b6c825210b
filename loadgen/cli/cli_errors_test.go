package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/client"
	"github.com/subspace/kbkit/loadgen"
	"github.com/subspace/kbkit/loadgen/metrics"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/target"
)

// deadURL is the URL of a loopback port nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// expectCannotRun checks the answer of a run that could not start: exit
// 2 within a few seconds, nothing on stdout, one plain message on stderr.
func expectCannotRun(t *testing.T, start time.Time, code int, stdout, stderr, want string) {
	t.Helper()
	if code != ExitErrored {
		t.Errorf("exit %d, want %d", code, ExitErrored)
	}
	// Bounded by the preflight: a run that retried instead would go on
	// for minutes; the margin is for a busy machine.
	if d := time.Since(start); d > target.PreflightTimeout+30*time.Second {
		t.Errorf("took %s", d)
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
	if !strings.HasPrefix(stderr, "kbkit loadgen: could not run: ") || !strings.Contains(stderr, want) ||
		strings.Contains(stderr, "loadgen: loadgen") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying %q", stderr, want)
	}
}

func TestDeadServerFailsFast(t *testing.T) {
	url := deadURL(t)
	start := time.Now()
	code, stdout, stderr := kbkitLoadgen(t, "run", "--server", url, "--token", "kbk_x", "--duration", "30s")
	expectCannotRun(t, start, code, stdout, stderr, "the server at "+url+" is unreachable")

	// The same from $KBKIT_URL and $KBKIT_TOKEN.
	t.Setenv(client.EnvURL, url)
	t.Setenv(client.EnvToken, "kbk_x")
	start = time.Now()
	code, stdout, stderr = kbkitLoadgen(t, "run", "--duration", "30s")
	expectCannotRun(t, start, code, stdout, stderr, "the server at "+url+" is unreachable")
}

func TestRefusedTokenFailsFast(t *testing.T) {
	e, err := target.NewEmbedded(context.Background(), pgprovider.ForTest(t), target.EmbeddedOptions{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	url := e.Endpoints()[0]
	start := time.Now()
	code, stdout, stderr := kbkitLoadgen(t, "run", "--server", url, "--token", "kbk_not-a-device", "--duration", "30s")
	expectCannotRun(t, start, code, stdout, stderr, "the server at "+url+" refuses token 1 of 1")

	// A good token from $KBKIT_TOKEN runs, and --json - puts the result on
	// stdout (the summary on stderr).
	tokens, err := e.Devices(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(client.EnvURL, url)
	t.Setenv(client.EnvToken, tokens[0])
	code, stdout, stderr = kbkitLoadgen(t, "run", "--editors", "2", "--duration", "1s", "--quiet", "--json", "-")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	res, err := metrics.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatalf("stdout is not a result: %v\n%s", err, stdout)
	}
	if res.Run.Server != url || !strings.Contains(stderr, "latency") {
		t.Errorf("server %q; stderr:\n%s", res.Run.Server, stderr)
	}
}

func TestConsoleModes(t *testing.T) {
	var buf bytes.Buffer
	if m, note := consoleMode(&buf, false, false); m != consolePlain || note != "" {
		t.Errorf("not a terminal: mode %d %q", m, note)
	}
	if m, _ := consoleMode(&buf, true, false); m != consoleForced {
		t.Errorf("--tty into a buffer: mode %d, want forced", m)
	}
	// A terminal that reports no size (a buffer has none) gets plain lines
	// and is told why, --tty or not.
	for _, tty := range []bool{false, true} {
		if m, note := consoleMode(&buf, tty, true); m != consolePlain || !strings.Contains(note, "no size") {
			t.Errorf("terminal without a size (--tty %v): mode %d %q", tty, m, note)
		}
	}

	// The forced display really writes into a file or pipe.
	c := newConsole(&buf, consoleForced, "kbkit loadgen test", 2*time.Second)
	for i := 0; i < 4; i++ {
		c.update(loadgen.Status{Phase: "load", Elapsed: time.Duration(i) * 200 * time.Millisecond, Duration: 2 * time.Second})
		time.Sleep(200 * time.Millisecond)
	}
	c.close()
	if !strings.Contains(buf.String(), "kbkit loadgen test") || !strings.Contains(buf.String(), "totals") {
		t.Errorf("the forced console wrote %q", buf.String())
	}

	// Plain mode prints a line during the load.
	buf.Reset()
	c = newConsole(&buf, consolePlain, "kbkit loadgen test", 2*time.Second)
	c.update(loadgen.Status{Phase: "load", Elapsed: time.Second, Duration: 2 * time.Second})
	c.close()
	if !strings.HasPrefix(buf.String(), "kbkit loadgen test 1s/2s: achieved") {
		t.Errorf("plain console wrote %q", buf.String())
	}
}
