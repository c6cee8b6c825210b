package adapter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/subspace/kbkit/internal/syncio"
	"github.com/subspace/kbkit/internal/version"

	"github.com/subspace/kbkit/spec"
	"github.com/subspace/kbkit/speckit/cases"
)

const modeEnv = "KBKIT_ADAPTER_TEST_MODE"

// TestMain turns the test binary into a fake adapter when modeEnv is set.
func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		os.Exit(fakeAdapter(mode))
	}
	os.Exit(m.Run())
}

// misbehaving wraps the reference; its Tokenize misbehaves on magic texts.
type misbehaving struct {
	cases.Reference
	mode string
}

func (m misbehaving) Tokenize(ctx context.Context, req cases.TokenizeRequest) (cases.TokenizeReply, error) {
	if req.Text != nil {
		switch *req.Text {
		case "crash":
			os.Exit(3)
		case "hang":
			time.Sleep(time.Hour)
		case "garbage":
			fmt.Println("this is not JSON")
		case "wrong-id":
			fmt.Println(`{"type":"tokenize_ok","in_reply_to":999999,"refs":[]}`)
		case "unsupported":
			return cases.TokenizeReply{}, fmt.Errorf("%w: this text", cases.ErrNotSupported)
		case "fails":
			return cases.TokenizeReply{}, errors.New("something broke")
		}
	}
	return m.Reference.Tokenize(ctx, req)
}

func fakeAdapter(mode string) int {
	ctx := context.Background()
	switch mode {
	case "ref":
		if err := Serve(ctx, os.Stdin, os.Stdout, cases.Reference{}); err != nil {
			return 1
		}
	case "misbehave":
		fmt.Fprintln(os.Stderr, "hello from the adapter")
		srv := Server{Impl: misbehaving{mode: mode}, Info: Info{Implementation: "fake", Version: "1", Suites: []string{"tokenizer"}}}
		if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil {
			return 1
		}
	case "edit-text-only":
		srv := Server{Impl: cases.Reference{}, Info: Info{Implementation: "fake", Version: "1",
			Suites: []string{"commands"}, Commands: []string{"edit-text"}}}
		_ = srv.Serve(ctx, os.Stdin, os.Stdout)
	case "no-init":
		fmt.Println(`{"type":"init_ok","in_reply_to":1}`) // no suites
		time.Sleep(time.Hour)
	case "v1-only":
		return v1OnlyAdapter(ctx)
	case "speaks-none":
		// Refuses every protocol, as an adapter of a future version would.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var h header
			_ = json.Unmarshal(sc.Bytes(), &h)
			os.Stdout.Write(append(errorReply(h.MsgID, CodeNotSupported, "protocol 7 only"), '\n'))
		}
	case "exit":
		return 4
	case "tee":
		return teeAdapter(ctx)
	}
	return 0
}

// v1OnlyAdapter is an adapter written from the prose of adapter protocol
// 1: it answers init only when init.protocol is 1 (error 10 "protocol N
// not supported" otherwise, as such adapters did), knows nothing of
// init.protocols and names no protocol in init_ok; the reference answers
// everything else.
func v1OnlyAdapter(ctx context.Context) int {
	srv := Server{Impl: cases.Reference{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var req struct {
			Type     string `json:"type"`
			MsgID    int64  `json:"msg_id"`
			Protocol int    `json:"protocol"`
		}
		_ = json.Unmarshal(sc.Bytes(), &req)
		reply := srv.handle(ctx, sc.Bytes())
		switch {
		case req.Type == TypeInit && req.Protocol != 1:
			reply = errorReply(&req.MsgID, CodeNotSupported, fmt.Sprintf("protocol %d not supported", req.Protocol))
		case req.Type == TypeInit:
			reply = []byte(fmt.Sprintf(`{"type":"init_ok","in_reply_to":%d,"implementation":"v1","version":"2026-12-01","suites":["commands","tokenizer","window","planner","canonical"]}`, req.MsgID))
		}
		if _, err := os.Stdout.Write(append(reply, '\n')); err != nil {
			return 1
		}
	}
	return 0
}

func start(t *testing.T, mode string, opts Options) *Client {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Env = append(os.Environ(), modeEnv+"="+mode)
	c, err := Start(context.Background(), []string{exe}, opts)
	if err != nil {
		t.Fatalf("Start(%s): %v", mode, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func text(s string) cases.TokenizeRequest { return cases.TokenizeRequest{Text: &s} }

// TestReferenceThroughProtocol runs the built-in spec through Serve and the
// client: every case must come out exactly as in process.
func TestReferenceThroughProtocol(t *testing.T) {
	all, err := cases.Open()
	if err != nil {
		t.Skipf("the built-in spec does not load (being edited?): %v", err)
	}
	c := start(t, "ref", Options{})
	if got := c.Info(); got.Implementation != "kbkit" || !got.Supports(cases.SuiteCommands) {
		t.Fatalf("init_ok = %+v", got)
	}
	ctx := context.Background()
	for _, k := range all {
		want := cases.Check(ctx, cases.Reference{}, k)
		got := cases.Check(ctx, c, k)
		if want.Status != got.Status || want.Diff != got.Diff {
			t.Errorf("%s: in process %s %q, through the protocol %s %q", k.ID, want.Status, want.Diff, got.Status, got.Diff)
		}
	}
	if c.Restarts() != 0 {
		t.Errorf("Restarts = %d", c.Restarts())
	}
}

// An adapter of protocol 1 runs the suites of cases under this kit: init
// proposes 2, is refused, proposes 1, and every case comes out as in
// process (spec/ADAPTER.md 3, init), but those of the canonical suite,
// which needs protocol 2.
func TestProtocol1AdapterRuns(t *testing.T) {
	all, err := cases.Open()
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, "v1-only", Options{})
	if info := c.Info(); info.Protocol != 1 || info.Implementation != "v1" || !info.Supports(cases.SuiteWindow) {
		t.Fatalf("init_ok = %+v, want protocol 1", info)
	}
	ctx := context.Background()
	for _, k := range all {
		got := cases.Check(ctx, c, k)
		if k.Suite() == cases.SuiteCanonical {
			// Listed, but the canonical suite needs protocol 2: skipped,
			// without a request.
			if got.Status != cases.Skip || !strings.Contains(got.Diff, "needs protocol 2") {
				t.Errorf("%s: %s %s, want skipped (the suite needs protocol 2)", k.ID, got.Status, got.Diff)
			}
			continue
		}
		if got.Status != cases.Pass {
			t.Errorf("%s: %s %s", k.ID, got.Status, got.Diff)
		}
	}
	if c.Restarts() != 0 {
		t.Errorf("Restarts = %d", c.Restarts())
	}
	// The runner's own adapter takes the newest version it is offered.
	if p := start(t, "ref", Options{}).Info().Protocol; p != Protocol {
		t.Errorf("the reference adapter took protocol %d, want %d", p, Protocol)
	}
}

// An adapter that speaks none of the versions offered does not start,
// and the error says which versions were offered and what it answered.
func TestProtocolNoneSpoken(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), []string{exe}, Options{Env: append(os.Environ(), modeEnv+"=speaks-none"), MaxFailures: 1})
	if err == nil || !strings.Contains(err.Error(), "speaks none of the protocol versions 1 to 2") || !strings.Contains(err.Error(), "protocol 1: protocol 7 only") {
		t.Fatalf("Start = %v, want an error naming the versions offered", err)
	}
}

func TestCrashRestarts(t *testing.T) {
	var stderr syncio.Buffer
	c := start(t, "misbehave", Options{Stderr: &stderr})
	ctx := context.Background()
	if _, err := c.Tokenize(ctx, text("[[a]]")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Tokenize(ctx, text("crash"))
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("crash: err = %v, want ErrExited with exit status 3", err)
	}
	r, err := c.Tokenize(ctx, text("[[b]]"))
	if err != nil {
		t.Fatalf("after the crash: %v", err)
	}
	if string(r.Refs) != `[{"kind":"link","title":"b"}]` {
		t.Errorf("refs = %s", r.Refs)
	}
	if c.Restarts() != 1 {
		t.Errorf("Restarts = %d, want 1", c.Restarts())
	}
	c.Close()
	if n := strings.Count(stderr.String(), "[adapter] hello from the adapter\n"); n != 2 {
		t.Errorf("stderr forwarded %d times, want 2 (one per start):\n%s", n, stderr.String())
	}
}

func TestTimeoutRestarts(t *testing.T) {
	c := start(t, "misbehave", Options{Timeout: 300 * time.Millisecond, Stderr: &syncio.Buffer{}})
	ctx := context.Background()
	begin := time.Now()
	_, err := c.Tokenize(ctx, text("hang"))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	// The adapter hangs for good: any end is the timeout's; the bound
	// is a hang detector, far above 300 ms on a busy machine.
	if d := time.Since(begin); d > time.Minute {
		t.Errorf("the timeout took %v", d)
	}
	if _, err := c.Tokenize(ctx, text("x")); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
}

func TestProtocolErrors(t *testing.T) {
	c := start(t, "misbehave", Options{Stderr: &syncio.Buffer{}})
	ctx := context.Background()
	for _, magic := range []string{"garbage", "wrong-id"} {
		_, err := c.Tokenize(ctx, text(magic))
		if !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: err = %v, want ErrProtocol", magic, err)
		}
		if _, err := c.Tokenize(ctx, text("ok")); err != nil {
			t.Errorf("after %s: %v", magic, err)
		}
	}
	if c.Restarts() != 2 {
		t.Errorf("Restarts = %d, want 2", c.Restarts())
	}
}

func TestErrorReplies(t *testing.T) {
	c := start(t, "misbehave", Options{Stderr: &syncio.Buffer{}})
	ctx := context.Background()
	_, err := c.Tokenize(ctx, text("unsupported"))
	var re *RemoteError
	if !errors.Is(err, cases.ErrNotSupported) || !errors.As(err, &re) || re.Code != CodeNotSupported {
		t.Errorf("unsupported: err = %v, want code 10 wrapping ErrNotSupported", err)
	}
	_, err = c.Tokenize(ctx, text("fails"))
	if !errors.As(err, &re) || re.Code != CodeCrashed || errors.Is(err, cases.ErrNotSupported) {
		t.Errorf("fails: err = %v, want code 13", err)
	}
	// Suites the adapter does not list are skipped without a request.
	_, err = c.Apply(ctx, json.RawMessage(`{}`), json.RawMessage(`{}`))
	if !errors.Is(err, cases.ErrNotSupported) {
		t.Errorf("Apply: err = %v, want ErrNotSupported", err)
	}
	if c.Restarts() != 0 {
		t.Errorf("error replies restarted the adapter %d times", c.Restarts())
	}
}

func TestCommandsList(t *testing.T) {
	c := start(t, "edit-text-only", Options{})
	files, err := cases.LoadFS(spec.FS, "commands")
	if err != nil {
		t.Skipf("the built-in spec does not load: %v", err)
	}
	ctx := context.Background()
	n := 0
	for _, f := range files {
		for _, k := range f.Cases {
			o := cases.Check(ctx, c, k)
			typ, _ := k.When["cmd"].(map[string]any)["type"].(string)
			if typ == "edit-text" {
				n++
				if o.Status == cases.Skip {
					t.Errorf("%s: skipped", k.ID)
				}
			} else if o.Status != cases.Skip {
				t.Errorf("%s (%s): %s, want skip", k.ID, typ, o.Status)
			}
		}
	}
	if n == 0 {
		t.Error("no edit-text case ran")
	}
}

func TestStartFails(t *testing.T) {
	exe, _ := os.Executable()
	for _, mode := range []string{"no-init", "exit"} {
		_, err := Start(context.Background(), []string{exe}, Options{
			Env: append(os.Environ(), modeEnv+"="+mode), Timeout: 2 * time.Second, Stderr: &syncio.Buffer{}})
		if err == nil {
			t.Errorf("%s: Start succeeded", mode)
		}
	}
	if _, err := Start(context.Background(), []string{"/nonexistent/adapter"}, Options{}); err == nil {
		t.Error("Start of a missing program succeeded")
	}
}

func TestGivesUp(t *testing.T) {
	c := start(t, "misbehave", Options{Stderr: &syncio.Buffer{}, MaxFailures: 2})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.Tokenize(ctx, text("crash")); err == nil {
			t.Fatal("crash: no error")
		}
	}
	_, err := c.Tokenize(ctx, text("fine"))
	if !errors.Is(err, ErrGaveUp) {
		t.Errorf("err = %v, want ErrGaveUp", err)
	}
}

func TestServeTranscript(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"init","msg_id":1,"protocol":1}`,
		``,
		`{"type":"tokenize","msg_id":2,"text":"#a [[b]]"}`,
		`{"type":"tokenize","msg_id":3,"formula":"=A1:A2"}`,
		`{"type":"tokenize","msg_id":4}`,
		`{"type":"frobnicate","msg_id":5}`,
		`not json`,
		`{"type":"apply","msg_id":6}`,
		`{"type":"init","msg_id":7,"protocol":3}`,
		`{"type":"tokenize","text":"no id"}`,
		`{"type":"apply","msg_id":8,"doc":{"nodes":[],"page":{"id":"p","title":"T","aliases":[],"dir":"","merged_into":null}},"cmd":{"id":"c","type":"edit-text","payload":{"node":"x","text":"y"}}}`,
	}, "\n")
	var out bytes.Buffer
	if err := Serve(context.Background(), strings.NewReader(in), &out, cases.Reference{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`init_ok 1 0`, `tokenize_ok 2 0`, `tokenize_ok 3 0`, `error 4 12`, `error 5 10`,
		`error <nil> 12`, `error 6 12`, `error 7 10`, `error <nil> 12`, `apply_ok 8 0`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d replies, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, l := range lines {
		var h struct {
			Type      string `json:"type"`
			InReplyTo *int64 `json:"in_reply_to"`
			Code      int    `json:"code"`
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		irt := "<nil>"
		if h.InReplyTo != nil {
			irt = fmt.Sprint(*h.InReplyTo)
		}
		if got := fmt.Sprintf("%s %s %d", h.Type, irt, h.Code); got != want[i] {
			t.Errorf("reply %d = %s, want %s (%s)", i, got, want[i], l)
		}
	}
	var tok map[string]any
	_ = json.Unmarshal([]byte(lines[2]), &tok)
	if !reflect.DeepEqual(tok["deps"], []any{map[string]any{"cell": "A1"}, map[string]any{"cell": "A2"}}) {
		t.Errorf("formula deps: %s", lines[2])
	}
	if !strings.HasPrefix(lines[0], `{"type":"init_ok","in_reply_to":1,`) {
		t.Errorf("replies should start with type and in_reply_to: %s", lines[0])
	}
	// The reference names itself kbkit at the kit's version.
	var ok struct{ Implementation, Version string }
	if err := json.Unmarshal([]byte(lines[0]), &ok); err != nil || ok.Implementation != "kbkit" || ok.Version != version.Kit {
		t.Errorf("init_ok names %q %q, want kbkit %s (%v)", ok.Implementation, ok.Version, version.Kit, err)
	}
}

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"kbkit adapter", []string{"kbkit", "adapter"}},
		{"  node   a.mjs  ", []string{"node", "a.mjs"}},
		{`node "my dir/a.mjs" --x='a b'`, []string{"node", "my dir/a.mjs", "--x=a b"}},
		{`a\ b "c\"d" 'e\f' ""`, []string{"a b", `c"d`, `e\f`, ""}},
	} {
		got, err := SplitCommand(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "   ", `a "b`, `a 'b`, `a\`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

// A command whose own type or id has the wrong JSON type is rejected, never
// an error (spec/ADAPTER.md 3); only a cmd that is not an object is error 12.
func TestServeCommandFieldTypes(t *testing.T) {
	const doc = `"doc":{"nodes":[],"page":{"id":"p","title":"T","aliases":[],"dir":"","merged_into":null}}`
	const unborn = `"doc":{"nodes":[],"page":{"id":"p","title":"","aliases":[],"dir":"","merged_into":null}}`
	for _, tc := range []struct{ req, want string }{
		{`{"type":"apply","msg_id":1,` + doc + `,"cmd":{"id":"c","type":5,"payload":{}}}`, `"rejected":{"code":"unknown-type"`},
		{`{"type":"apply","msg_id":1,` + doc + `,"cmd":{"id":7,"type":"edit-text","payload":{"node":"x","text":"y"}}}`, `"rejected":{"code":"invalid-payload"`},
		{`{"type":"apply","msg_id":1,` + unborn + `,"cmd":{"id":7,"type":"edit-text","payload":{"node":"x","text":"y"}}}`, `"rejected":{"code":"page-not-found"`},
		{`{"type":"apply","msg_id":1,` + doc + `,"cmd":[1]}`, `"type":"error","in_reply_to":1,"code":12`},
		{`{"type":"plan","msg_id":1,"workspace":"w","pages":[{"nodes":[],"page":{"id":"p","title":"T","aliases":[],"dir":"","merged_into":null}}],"page":"p","cmd":{"id":[],"type":"rename-page","payload":{"title":"U"}}}`, `"rejected":{"code":"invalid-payload"`},
		{`{"type":"plan","msg_id":1,"workspace":"w","pages":[],"page":"q","cmd":{"id":7,"type":"rename-page","payload":{"title":"U"}}}`, `"rejected":{"code":"page-not-found"`},
	} {
		var out bytes.Buffer
		if err := Serve(context.Background(), strings.NewReader(tc.req+"\n"), &out, cases.Reference{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s\n-> %s, want %s", tc.req, out.String(), tc.want)
		}
	}
}
