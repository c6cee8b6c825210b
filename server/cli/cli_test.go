package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/server/store"
)

func TestMain(m *testing.M) { os.Exit(pgprovider.RunTests(m)) }

// lines is an io.Writer that keeps what is written and hands each
// complete line to a channel, so that a test waits for output as an event.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	part string
	ch   chan string
}

func newLines() *lines { return &lines{ch: make(chan string, 16)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.part += string(p)
	for {
		i := strings.IndexByte(l.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case l.ch <- l.part[:i]:
		default:
		}
		l.part = l.part[i+1:]
	}
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// next is the next line written, or a failure when the command ended (or
// a minute went by: a hang detector) first.
func (l *lines) next(t *testing.T, ended <-chan error) string {
	t.Helper()
	select {
	case s := <-l.ch:
		return s
	case err := <-ended:
		t.Fatalf("the command ended (%v) before writing a line; wrote %q", err, l.String())
	case <-time.After(time.Minute):
		t.Fatalf("no line within a minute; wrote %q", l.String())
	}
	return ""
}

// execute runs cmd with args in process until ctx ends; its error arrives
// on the returned channel.
func execute(ctx context.Context, cmd *cobra.Command, args []string, stdout, stderr io.Writer) <-chan error {
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ended := make(chan error, 1)
	go func() { ended <- cmd.ExecuteContext(ctx) }()
	return ended
}

// run runs cmd with args to its end.
func run(t *testing.T, cmd *cobra.Command, args ...string) (stdout string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = <-execute(context.Background(), cmd, args, &out, &errb)
	return out.String(), err
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// kbkit serve on a database it is given prints its one JSON line once it
// serves, with a device of --workspace that the database knows, exposes
// the process's own figures on /metrics, writes its CPU profile, and ends
// cleanly (nil) when its context does (a signal).
func TestServe(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := newLines(), newLines()
	ended := execute(ctx, NewServeCommand(), []string{"--dsn", dsn, "--addr", "127.0.0.1:0", "--workspace", "acme", "--cpuprofile", prof}, stdout, stderr)
	var info serveInfo
	if err := json.Unmarshal([]byte(stdout.next(t, ended)), &info); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.URL, "http://127.0.0.1:") || info.Workspace != "acme" || info.WorkspaceID == "" ||
		info.DeviceID == "" || !strings.HasPrefix(info.Token, "kbk_") || info.DSN != dsn {
		t.Errorf("JSON line %+v", info)
	}
	if status, body := get(t, info.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz: %d %s", status, body)
	}
	if status, body := get(t, info.URL+"/metrics"); status != http.StatusOK || !strings.Contains(body, "\ngo_goroutines ") || !strings.Contains(body, "\nprocess_open_fds ") {
		t.Errorf("/metrics: %d, without go_goroutines or process_open_fds", status)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("serve ended with %v\n%s", err, stderr.String())
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile: %v", err)
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("stderr has no stopped line:\n%s", stderr.String())
	}
	// The device paired at start is in the database, which serve keeps.
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	st, err := store.Open(sctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.RevokeDevice(sctx, info.DeviceID); err != nil {
		t.Errorf("the device of the JSON line: %v", err)
	}
}

// Without --dsn, on a borrowed PostgreSQL (KBKIT_PG_DSN), serve creates a
// database of its own and drops it on exit.
func TestServeThrowawayDatabase(t *testing.T) {
	t.Setenv(pgprovider.EnvDSN, pgprovider.ForTest(t))
	t.Setenv(pgprovider.EnvKind, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := newLines(), newLines()
	ended := execute(ctx, NewServeCommand(), []string{"--addr", "127.0.0.1:0"}, stdout, stderr)
	var info serveInfo
	if err := json.Unmarshal([]byte(stdout.next(t, ended)), &info); err != nil {
		t.Fatal(err)
	}
	if info.Workspace != "dev" || info.DSN == "" || info.DSN == os.Getenv(pgprovider.EnvDSN) {
		t.Errorf("JSON line %+v", info)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("serve ended with %v\n%s", err, stderr.String())
	}
	sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()
	if st, err := store.Open(sctx, info.DSN); err == nil {
		st.Close()
		t.Errorf("the database %s outlived serve", info.DSN)
	}
}

// Bad flags and a taken port fail before any database is touched.
func TestServeRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"--addr", ln.Addr().String(), "--dsn", "postgres://nowhere.invalid/x"}, "address already in use"},
	} {
		out, err := run(t, NewServeCommand(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%v: %v, stdout %q (want an error with %q)", c.args, err, out, c.want)
		}
	}
}

// kbkit device pair prints a device whose token the database knows; revoke
// deletes it once, and refuses what it cannot do with a clear error.
func TestDevicePairAndRevoke(t *testing.T) {
	dsn := pgprovider.ForTest(t)
	t.Setenv(pgprovider.EnvDSN, "")
	out, err := run(t, NewDeviceCommand(), "pair", "--workspace", "acme", "--dsn", dsn)
	if err != nil {
		t.Fatal(err)
	}
	var dev struct {
		Workspace string `json:"workspace"`
		store.PairedDevice
	}
	if err := json.Unmarshal([]byte(out), &dev); err != nil || dev.Workspace != "acme" || !strings.HasPrefix(dev.Token, "kbk_") {
		t.Fatalf("pair: %v %q", err, out)
	}
	if _, err := run(t, NewDeviceCommand(), "pair", "--workspace", "acme", "--dsn", dsn); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, NewDeviceCommand(), "revoke", "--device", dev.DeviceID, "--dsn", dsn)
	if err != nil || !strings.Contains(out, `"device_id":"`+dev.DeviceID+`"`) || strings.Count(out, "\n") != 1 {
		t.Fatalf("revoke --device: %v %q", err, out)
	}
	out, err = run(t, NewDeviceCommand(), "revoke", "--workspace", "acme", "--all", "--dsn", dsn)
	if err != nil || strings.Count(out, "\n") != 1 || strings.Contains(out, dev.DeviceID) {
		t.Fatalf("revoke --workspace --all: %v %q", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"revoke", "--device", dev.DeviceID, "--dsn", dsn}, "no device " + dev.DeviceID},
		{[]string{"revoke", "--workspace", "acme", "--all", "--dsn", dsn}, `workspace "acme" has no devices`},
		{[]string{"revoke", "--device", "x", "--workspace", "acme", "--dsn", dsn}, "not both"},
		{[]string{"revoke", "--workspace", "acme", "--dsn", dsn}, "is required"},
		{[]string{"revoke", "--device", "x"}, "no database"},
		{[]string{"pair", "--workspace", " ", "--dsn", dsn}, "--workspace NAME is required"},
		{[]string{"pair", "--workspace", "acme"}, "no database"},
	} {
		out, err := run(t, NewDeviceCommand(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || out != "" {
			t.Errorf("%v: %v, stdout %q (want an error with %q)", c.args, err, out, c.want)
		}
	}
}

// kbkit pg up prints the DSN and writes it to --print-dsn once the server
// is up, and removes the file when it stops.
func TestPgUp(t *testing.T) {
	t.Setenv(pgprovider.EnvDSN, pgprovider.ForTest(t)) // a borrowed server: nothing to start
	t.Setenv(pgprovider.EnvKind, "")
	file := filepath.Join(t.TempDir(), "pg.dsn")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := newLines(), newLines()
	ended := execute(ctx, NewPgUpCommand(), []string{"--print-dsn", file}, stdout, stderr)
	dsn := stdout.next(t, ended)
	if b, err := os.ReadFile(file); err != nil || string(b) != dsn+"\n" {
		t.Errorf("--print-dsn file: %q, %v; stdout %q", b, err, dsn)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("pg up ended with %v\n%s", err, stderr.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("--print-dsn file left behind: %v", err)
	}
}

// urlHost makes a listener's address reachable in a URL: an unspecified
// host is loopback, an IPv6 one is bracketed.
func TestURLHost(t *testing.T) {
	for _, c := range []struct {
		addr *net.TCPAddr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}, "127.0.0.1:80"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 1}, "127.0.0.1:1"},
		{&net.TCPAddr{Port: 2}, "127.0.0.1:2"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 3}, "[::1]:3"},
	} {
		if got := urlHost(c.addr); got != c.want {
			t.Errorf("urlHost(%v) = %s, want %s", c.addr, got, c.want)
		}
	}
}
