package broken

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subspace/kbkit/sim/internal/wsrelay"
	"github.com/subspace/kbkit/target"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// This file is test support: a target.Target that puts a mutating proxy in front
// of another target, to make deliberately broken servers out of a correct
// one and prove that the checkers notice (broken_test.go).

// mutation is how a Proxy breaks the server behind it. A nil field
// passes that traffic through unchanged.
type Mutation struct {
	// command sees the body of every POST /trpc/kb.command (one envelope)
	// and the request's Authorization header (which device posts it)
	// before it is forwarded, and returns the body to forward.
	command func(auth string, body []byte) []byte
	// response sees the body of the server's answer to a kb.command,
	// kb.page or kb.limits call (proc names which) and returns the body to
	// answer; nil withholds the answer (the call hangs until the client
	// gives up).
	response func(proc string, body []byte) []byte
	// answers, when set, is the one procedure whose answers response
	// changes: the variant can then break a server in-process (Wrap).
	answers string
	// upstream sees every client-to-server WebSocket message (the
	// subscriptions, with their lastEventId) and returns the message to
	// forward.
	upstream func(b []byte) []byte
	// stream returns the mutator of one server-to-client WebSocket
	// stream, given the Authorization header the socket was opened with.
	stream func(auth string) streamMutator
	// refuseSockets answers every WebSocket upgrade 503 (counted in
	// fired).
	refuseSockets bool
	// lose sees every kb.command body first; a non-nil answer is sent
	// back 200 in place of forwarding the command (which never reaches
	// the server).
	lose func(body []byte) (answer []byte)
	// answered sees each forwarded kb.command's body with the server's
	// answer (before response's rewriting).
	answered func(cmd, answer []byte)
	// fired counts the mutations made (commands rewritten, events doubled,
	// swapped or dropped): zero means the run did not exercise the bug.
	fired *atomic.Int64
}

// streamMutator rewrites the tracked data events (kb.onPage) of one
// WebSocket, in the order the server sent them.
type streamMutator interface {
	// event returns what the client receives in place of ev (nothing, ev,
	// or several events); it may hold events back.
	event(ev wsrelay.Event) []wsrelay.Event
	// flush returns the events held back: the stream has been idle for a
	// while, another message follows, or the stream ends.
	flush() []wsrelay.Event
}

// Proxy is a target.Target whose endpoints are proxies, one per instance
// of the inner target, forwarding HTTP and the /trpc WebSocket through a
// Mutation. Devices and restarts are the inner target's.
type Proxy struct {
	inner     target.Target
	mut       Mutation
	ctx       context.Context
	cancel    context.CancelFunc
	transport *http.Transport
	servers   []*httptest.Server
	wg        sync.WaitGroup // WebSocket pumps
}

func NewProxy(inner target.Target, mut Mutation) *Proxy {
	p := &Proxy{inner: inner, mut: mut,
		transport: http.DefaultTransport.(*http.Transport).Clone()}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for i := range inner.Endpoints() {
		p.servers = append(p.servers, httptest.NewServer(p.handler(i)))
	}
	return p
}

// Close stops the proxies and their sockets (not the inner target).
func (p *Proxy) Close() {
	p.cancel()
	for _, s := range p.servers {
		s.Close()
	}
	p.wg.Wait()
	p.transport.CloseIdleConnections()
}

// Endpoints implements target.Target: the proxies' URLs.
func (p *Proxy) Endpoints() []string {
	out := make([]string, len(p.servers))
	for i, s := range p.servers {
		out[i] = s.URL
	}
	return out
}

// Devices implements target.Target.
func (p *Proxy) Devices(ctx context.Context, n int) ([]string, error) {
	return p.inner.Devices(ctx, n)
}

// RestartInstance restarts the inner instance i (its proxy stays up; the
// proxied sockets end with the instance's).
func (p *Proxy) RestartInstance(ctx context.Context, i int) error {
	if r, ok := p.inner.(target.Restarter); ok {
		return r.RestartInstance(ctx, i)
	}
	return nil
}

// CanRestartPostgres implements target.PostgresRestarter.
func (p *Proxy) CanRestartPostgres() bool {
	r, ok := p.inner.(target.PostgresRestarter)
	return ok && r.CanRestartPostgres()
}

// RestartPostgres implements target.PostgresRestarter.
func (p *Proxy) RestartPostgres(ctx context.Context) error {
	return p.inner.(target.PostgresRestarter).RestartPostgres(ctx)
}

func (p *Proxy) upstream(i int) *url.URL {
	u, _ := url.Parse(p.inner.Endpoints()[i]) // looked up per request: restarts may move it
	return u
}

func (p *Proxy) handler(i int) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(p.upstream(i)) },
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// An instance being restarted: a retryable 502.
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
		ModifyResponse: p.modifyResponse,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/trpc" && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			if p.mut.refuseSockets {
				p.mut.fired.Add(1)
				http.Error(w, "proxy: no WebSockets", http.StatusServiceUnavailable)
				return
			}
			p.websocket(w, r, i)
			return
		}
		if (p.mut.command != nil || p.mut.lose != nil || p.mut.answered != nil) && r.Method == http.MethodPost && r.URL.Path == "/trpc/kb.command" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
				return
			}
			if p.mut.command != nil {
				body = p.mut.command(r.Header.Get("Authorization"), body)
			}
			if p.mut.lose != nil {
				if answer := p.mut.lose(body); answer != nil {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write(answer)
					return
				}
			}
			r = r.WithContext(context.WithValue(r.Context(), commandBody{}, body))
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rp.ServeHTTP(w, r)
	})
}

// commandBody is the context key of a forwarded kb.command's body.
type commandBody struct{}

// modifyResponse passes the answer to a kb.command, kb.page or kb.limits call
// through the Mutation's answered and response hooks.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	if (p.mut.response == nil && p.mut.answered == nil) || resp.Request == nil || resp.Header.Get("Content-Encoding") != "" {
		return nil
	}
	proc := strings.TrimPrefix(resp.Request.URL.Path, "/trpc/")
	if proc != "kb.command" && proc != "kb.page" && proc != "kb.limits" {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if cmd, ok := resp.Request.Context().Value(commandBody{}).([]byte); ok && p.mut.answered != nil {
		p.mut.answered(cmd, body)
	}
	if p.mut.response != nil {
		body = p.mut.response(proc, body)
	}
	if body == nil {
		select { // a server that never answers
		case <-resp.Request.Context().Done():
			return resp.Request.Context().Err()
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}

// websocket proxies one /trpc WebSocket: it dials the instance with the
// client's credentials, then pumps messages both ways, server-to-client
// data events through the Mutation.
func (p *Proxy) websocket(w http.ResponseWriter, r *http.Request, i int) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	down, up, ok := wsrelay.Pair(ctx, w, r, *p.upstream(i))
	if !ok {
		return
	}
	p.wg.Add(1)
	defer p.wg.Done()
	defer down.CloseNow()
	defer up.CloseNow()
	up.SetReadLimit(64 << 20)
	down.SetReadLimit(64 << 20)

	// Client to server: through the Mutation's upstream hook.
	go wsrelay.RelayUp(ctx, cancel, down, up, p.mut.upstream)
	// Server to client: through the Mutation.
	msgs := wsrelay.ServerMessages(ctx, up)
	var mut streamMutator
	if p.mut.stream != nil {
		mut = p.mut.stream(r.Header.Get("Authorization"))
	}
	write := func(evs []wsrelay.Event) bool {
		for _, ev := range evs {
			if down.Write(ctx, websocket.MessageText, ev.Encode()) != nil {
				return false
			}
		}
		return true
	}
	idle := time.NewTimer(time.Hour)
	defer idle.Stop()
	for {
		select {
		case b, ok := <-msgs:
			if !ok {
				if mut != nil {
					write(mut.flush())
				}
				return
			}
			ev, isEvent := wsrelay.ParseEvent(b)
			switch {
			case mut == nil:
				if down.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			case isEvent:
				if !write(mut.event(ev)) {
					return
				}
			default:
				if !write(mut.flush()) || down.Write(ctx, websocket.MessageText, b) != nil {
					return
				}
			}
			idle.Reset(wsrelay.FlushAfter)
		case <-idle.C:
			if mut != nil && !write(mut.flush()) {
				return
			}
			idle.Reset(time.Hour)
		case <-ctx.Done():
			return
		}
	}
}

// ---- the broken variants ----

// Each variant breaks one guarantee of spec/PROTOCOL.md; a fresh value
// has fresh state (ids seen, counter).
func mutDoubleEcho() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, stream: func(string) streamMutator { return &doubleEcho{fired: n} }}
}

func mutReorder() Mutation {
	n := new(atomic.Int64)
	return Mutation{fired: n, stream: func(string) streamMutator { return &reorderEchoes{fired: n} }}
}

// mutSkipDedup forwards a command id posted before under a fresh id: a
// server without deduplication, where a retry applies twice.
func mutSkipDedup() Mutation {
	n := new(atomic.Int64)
	seen := newIDSet()
	return Mutation{fired: n, command: func(_ string, body []byte) []byte {
		id, env := envelopeID(body)
		if id == "" || !seen.add(id) {
			return body
		}
		n.Add(1)
		env["id"], _ = json.Marshal(uuid.NewString())
		b, _ := json.Marshal(env)
		return b
	}}
}

// mutDropDerived: a server that does not publish derived commands.
func mutDropDerived() Mutation {
	n := new(atomic.Int64)
	posted := newIDSet()
	return Mutation{
		fired: n,
		command: func(_ string, body []byte) []byte {
			if id, _ := envelopeID(body); id != "" {
				posted.add(id)
			}
			return body
		},
		stream: func(string) streamMutator { return dropUnposted{posted: posted, fired: n} },
	}
}

// doubleEcho sends every event whose server seq is 3 mod 8 twice, the copy
// with the next seq, and renumbers the rest of the stream after it: the
// server "logged a command twice".
type doubleEcho struct {
	shift int64
	fired *atomic.Int64
}

func (d *doubleEcho) event(ev wsrelay.Event) []wsrelay.Event {
	real := ev.Seq
	ev.Seq += d.shift
	out := []wsrelay.Event{ev}
	if real%8 == 3 {
		d.fired.Add(1)
		d.shift++
		ev.Seq++
		out = append(out, ev)
	}
	return out
}

func (d *doubleEcho) flush() []wsrelay.Event { return nil }

// reorderEchoes swaps the commands of the events with seqs 4 and 5 mod 10
// (each keeps its seq): the server delivers a page's commands out of
// order. An event 4 mod 10 whose successor does not follow at once is
// sent unchanged.
type reorderEchoes struct {
	held  *wsrelay.Event
	fired *atomic.Int64
}

func (r *reorderEchoes) event(ev wsrelay.Event) []wsrelay.Event {
	if h := r.held; h != nil {
		r.held = nil
		if ev.Seq == h.Seq+1 {
			r.fired.Add(1)
			h.Cmd, h.CmdID, ev.Cmd, ev.CmdID = ev.Cmd, ev.CmdID, h.Cmd, h.CmdID
			return []wsrelay.Event{*h, ev}
		}
		return append([]wsrelay.Event{*h}, r.event(ev)...)
	}
	if ev.Seq%10 == 4 {
		r.held = &ev
		return nil
	}
	return []wsrelay.Event{ev}
}

func (r *reorderEchoes) flush() []wsrelay.Event {
	if h := r.held; h != nil {
		r.held = nil
		return []wsrelay.Event{*h}
	}
	return nil
}

// dropUnposted drops the events of commands no client posted through the
// proxy: the derived commands of renames, merges and implicit pages.
type dropUnposted struct {
	posted *idSet
	fired  *atomic.Int64
}

func (d dropUnposted) event(ev wsrelay.Event) []wsrelay.Event {
	if !d.posted.has(ev.CmdID) {
		d.fired.Add(1)
		return nil
	}
	return []wsrelay.Event{ev}
}

func (d dropUnposted) flush() []wsrelay.Event { return nil }

type idSet struct {
	mu  sync.Mutex
	ids map[string]bool
}

func newIDSet() *idSet { return &idSet{ids: map[string]bool{}} }

// add adds id and reports whether it was there already.
func (s *idSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	had := s.ids[id]
	s.ids[id] = true
	return had
}

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

// envelopeID returns the id of a kb.command body and the body decoded.
func envelopeID(body []byte) (string, map[string]json.RawMessage) {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return "", nil
	}
	var id string
	_ = json.Unmarshal(env["id"], &id)
	return id, env
}
