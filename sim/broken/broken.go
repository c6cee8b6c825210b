package broken

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/subspace/kbkit/sim/internal/wsrelay"
	"github.com/subspace/kbkit/target"
)

// Broken is one deliberately broken server: a row of Table.
type Broken struct {
	Name   string          // what --broken-server takes
	Breaks string          // the guarantee of spec/PROTOCOL.md it breaks, one line
	New    func() Mutation // a fresh mutation (each proxy counts its own)
}

// Table holds the deliberately broken servers of mutate.go,
// mutate_wire.go and mutate_zoo.go, one row each, in name order (TestTable). New, Variant
// and Variants derive from it.
var Table = []Broken{
	{"ack-seq", "acknowledges some commands with another seq than their echo's", mutAckSeq},
	{"ack-without-commit", "acknowledges every seventh edit-text with a seq but never commits it (zoo: lost writes)", mutAckWithoutCommit},
	{"double-echo", "logs every command of seq 3 mod 8 twice", mutDoubleEcho},
	{"drop-derived", "never publishes derived commands", mutDropDerived},
	{"drop-rejected-outcomes", "leaves rejections out of a refetch's outcomes", mutDropRejectedOutcomes},
	{"event-id-not-seq", "sends events whose result.id is another than the seq", mutUntracked(true)},
	{"ignore-last-event-id", "replays a resumed subscription from seq 1", mutIgnoreLastEventID},
	{"limits-no-rate-burst", "answers kb.limits without rate_burst, as servers written before it was required did", mutLimitsWithout("rate_burst")},
	{"lose-cells", "serves kb.page without table cells and code outputs", mutLoseCells},
	{"no-answer", "stops answering kb.command after 20 calls", mutNoAnswer},
	{"no-duplicate-flag", "answers a retried committed id without duplicate: true", mutNoDuplicateFlag},
	{"no-own-echo", "never echoes a device's commands to that device", mutNoOwnEcho},
	{"non-canonical-page", "sends kb.page documents out of canonical key and node order", mutNonCanonicalPage},
	{"refuse-sockets", "refuses every WebSocket", mutRefuseSockets},
	{"renumber", "loses events and renumbers the rest so that no gap shows", mutRenumber},
	{"reorder", "swaps the commands of seqs 4 and 5 mod 10", mutReorder},
	{"resume-behind", "resumes a subscription from two events before its lastEventId (zoo: non-monotonic reads after a reconnect)", mutResumeBehind},
	{"skip-dedup", "applies a retried command again", mutSkipDedup},
	{"split-plan", "answers kb.page of other pages from before an acknowledged rename or merge (zoo: intermediate reads)", mutSplitPlan},
	{"stale-page", "answers every other kb.page of a page with the older snapshot it answered before (zoo: failed read-your-writes)", mutStalePage},
	{"untracked-events", "sends events without result.id", mutUntracked(false)},
}

// Variants lists the names New and Variant accept, in order.
func Variants() []string {
	out := make([]string, 0, len(Table))
	for _, v := range Table {
		out = append(out, v.Name)
	}
	return out
}

// New puts tgt behind a proxy that breaks one guarantee of
// spec/PROTOCOL.md (the named row of Table), to watch kbkit's checkers
// and reports catch it (the simulator's tests use the same variants). The
// returned func stops the proxy.
func New(tgt target.Target, name string) (target.Target, func(), error) {
	mk, ok := Variant(name)
	if !ok {
		return nil, nil, fmt.Errorf("%w: no broken-server variant %q (one of %s)", target.ErrCannotRun, name, strings.Join(Variants(), ", "))
	}
	p := NewProxy(tgt, mk())
	return p, p.Close, nil
}

// WireOnly reports whether the named variant changes only what the
// wire suite reads before its checks (the kb.limits answer): the
// simulator reads none of it, so only `kbkit conformance protocol` can
// catch it.
func WireOnly(name string) bool {
	mk, ok := Variant(name)
	if !ok {
		return false
	}
	m := mk()
	return m.answers == "kb.limits" && m.command == nil && m.upstream == nil && m.stream == nil && !m.refuseSockets
}

// Variant returns the constructor of the named variant's mutation.
func Variant(name string) (func() Mutation, bool) {
	for _, v := range Table {
		if v.Name == name {
			return v.New, true
		}
	}
	return nil, false
}

// AtRest is the control: a mutation that sends all traffic through every
// hook of the proxy (commands, answers, client and server WebSocket
// messages, events decoded and encoded again), each changing nothing.
func AtRest() Mutation {
	return Mutation{
		command: func(_ string, body []byte) []byte { return body },
		response: func(_ string, body []byte) []byte {
			return rewriteData(body, func(map[string]json.RawMessage) bool { return true })
		},
		upstream: func(b []byte) []byte { return b },
		stream: func(string) streamMutator {
			return mapEvents(func(ev wsrelay.Event) wsrelay.Event { return ev })
		},
	}
}

// Fired counts the mutations made (commands rewritten, events doubled,
// swapped or dropped): zero means the run did not exercise the bug.
func (m Mutation) Fired() int64 {
	if m.fired == nil {
		return 0
	}
	return m.fired.Load()
}

// Wrap returns the named variant as a wrapper of the server's own
// http.Handler (target.EmbeddedOptions.Wrap) and the count of what it
// changed. Only a variant that rewrites the answers of one procedure
// alone can be one (the calls of other procedures reach the server as
// they are): no
// proxy stands between the client and the server, so the transport
// (connections, timeouts, WebSocket frames) stays the server's own, as
// the wire suite's hostile checks need.
func Wrap(name string) (func(http.Handler) http.Handler, func() int64, error) {
	mk, ok := Variant(name)
	if !ok {
		return nil, nil, fmt.Errorf("%w: no broken-server variant %q (one of %s)", target.ErrCannotRun, name, strings.Join(Variants(), ", "))
	}
	m := mk()
	if m.response == nil || m.answers == "" || m.command != nil || m.upstream != nil || m.stream != nil || m.refuseSockets {
		return nil, nil, fmt.Errorf("%w: broken-server variant %q needs the proxy (it changes more than HTTP answers)", target.ErrCannotRun, name)
	}
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			proc := strings.TrimPrefix(r.URL.Path, "/trpc/")
			if proc != m.answers || r.Method != http.MethodGet {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := m.response(proc, rec.Body.Bytes())
			if body == nil {
				<-r.Context().Done() // a server that never answers
				return
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(rec.Code)
			_, _ = w.Write(body)
		})
	}
	return wrap, m.Fired, nil
}

// Fired counts the mutations this proxy made.
func (p *Proxy) Fired() int64 { return p.mut.Fired() }
