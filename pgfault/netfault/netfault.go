package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Fault is one kind of trouble on the link.
type Fault struct {
	// Name is how commands name it (kbkit pg partition-test --fault).
	Name string
	// Description says what the link does meanwhile.
	Description string
	toxics      []toxic
	// Flap, when set, alternates the fault (on for Flap) with a healthy
	// link (off for Flap) until healed.
	Flap time.Duration
}

type toxic struct {
	Type       string         `json:"type"`
	Stream     string         `json:"stream"`
	Attributes map[string]any `json:"attributes"`
}

func both(typ string, attrs map[string]any) []toxic {
	return []toxic{{typ, "upstream", attrs}, {typ, "downstream", attrs}}
}

// The faults. Each is the same on every connection, open or new, until
// the link heals.
var (
	Blackhole = Fault{Name: "blackhole", Description: "every byte dropped both ways, connections left open (a partition: nothing is refused)",
		toxics: both(cutType, map[string]any{"timeout": 0})}
	Timeout = Fault{Name: "timeout", Description: "every byte dropped both ways, each connection closed after 1 s",
		toxics: both(cutType, map[string]any{"timeout": 1000})}
	Latency = Fault{Name: "latency", Description: "300 ms (+-50 ms) more on every answer from Postgres",
		toxics: []toxic{{"latency", "downstream", map[string]any{"latency": 300, "jitter": 50}}}}
	Bandwidth = Fault{Name: "bandwidth", Description: "Postgres's answers at 2 KB/s",
		toxics: []toxic{{"bandwidth", "downstream", map[string]any{"rate": 2}}}}
	ResetPeer = Fault{Name: "reset_peer", Description: "every connection reset (TCP RST) at once, new ones too",
		toxics: both("reset_peer", map[string]any{"timeout": 0})}
	Flapping = Fault{Name: "flapping", Description: "a blackhole for 500 ms, a healthy link for 500 ms, and again",
		toxics: Blackhole.toxics, Flap: 500 * time.Millisecond}
)

// Faults lists every fault, in the order kbkit runs them.
func Faults() []Fault { return []Fault{Blackhole, Timeout, Latency, Bandwidth, ResetPeer, Flapping} }

// Names lists the fault names.
func Names() []string {
	var out []string
	for _, f := range Faults() {
		out = append(out, f.Name)
	}
	return out
}

// Parse finds a fault by name; "" is an error.
func Parse(name string) (Fault, error) {
	for _, f := range Faults() {
		if f.Name == name {
			return f, nil
		}
	}
	return Fault{}, fmt.Errorf("netfault: unknown fault %q (one of %s)", name, strings.Join(Names(), ", "))
}

// cutType is toxiproxy's timeout toxic (bytes dropped; the connection
// closed after Timeout ms if set, and when the toxic is removed) without
// its goroutine leak. Toxiproxy (v2.5.0) chains a connection's toxics by
// channels, each run by a goroutine that passes chunks to the next; when
// a timeout toxic closes its connection (its timeout, or its Cleanup at
// the heal) it stops reading its input, and the toxic before it, given
// one more chunk from the socket meanwhile, blocks forever sending it
// (with that chunk, its link and stubs): a goroutine or two lost per
// such connection and heal. cutToxic keeps reading, and dropping, its
// input once closed, until the toxic before it closes that input as its
// socket ends.
const cutType = "kbkit_cut"

type cutToxic struct{ toxics.TimeoutToxic }

func (t *cutToxic) Pipe(stub *toxics.ToxicStub) {
	t.TimeoutToxic.Pipe(stub)
	if stub.Closed() {
		drain(stub)
	}
}

// Cleanup runs when the toxic is removed from a connection (after its
// Pipe returned): the connection is closed, as with toxiproxy's own, and
// its input drained.
func (t *cutToxic) Cleanup(stub *toxics.ToxicStub) {
	stub.Close()
	go drain(stub)
}

// drain drops a closed stub's input until the toxic before it closes it.
func drain(stub *toxics.ToxicStub) {
	for range stub.Input {
	}
}

func init() { toxics.Register(cutType, new(cutToxic)) }

var quietOnce sync.Once

// Link is one proxy: clients dial Addr, the proxy dials the upstream.
type Link struct {
	// Addr is where clients connect (127.0.0.1:port).
	Addr string

	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	names []string
	stop  chan struct{} // ends a flapping fault
	done  chan struct{}
}

// Listen starts a proxy on a free loopback port to upstream (host:port).
func Listen(upstream string) (*Link, error) {
	quietOnce.Do(func() { zerolog.SetGlobalLevel(zerolog.ErrorLevel) })
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "kbkit-"+upstream, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("netfault: proxy to %s: %w", upstream, err)
	}
	return &Link{Addr: p.Listen, proxy: p}, nil
}

// Apply puts f on the link (after healing the previous fault).
func (l *Link) Apply(f Fault) error {
	if err := l.Heal(); err != nil {
		return err
	}
	if f.Flap <= 0 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.addLocked(f)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	l.mu.Lock()
	l.stop, l.done = stop, done
	err := l.addLocked(f)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	go func() {
		defer close(done)
		on := true
		t := time.NewTicker(f.Flap)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			l.mu.Lock()
			if on {
				l.removeLocked()
			} else {
				_ = l.addLocked(f)
			}
			l.mu.Unlock()
			on = !on
		}
	}()
	return nil
}

func (l *Link) addLocked(f Fault) error {
	for i, t := range f.toxics {
		name := fmt.Sprintf("%s-%d", f.Name, i)
		b, err := json.Marshal(map[string]any{"name": name, "type": t.Type, "stream": t.Stream, "toxicity": 1.0, "attributes": t.Attributes})
		if err != nil {
			return err
		}
		if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(b)); err != nil {
			return fmt.Errorf("netfault: %s: %w", f.Name, err)
		}
		l.names = append(l.names, name)
	}
	return nil
}

func (l *Link) removeLocked() {
	for _, n := range l.names {
		_ = l.proxy.Toxics.RemoveToxic(context.Background(), n)
	}
	l.names = nil
}

// Heal ends the fault on the link: bytes flow again (those dropped are
// gone: a connection that lost some is broken for good, as after a real
// partition that outlasted TCP's retransmissions).
func (l *Link) Heal() error {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop, l.done = nil, nil
	l.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked()
	return nil
}

// Close heals the link and stops the proxy (its connections are closed).
func (l *Link) Close() {
	_ = l.Heal()
	l.proxy.Stop()
}

// ThroughLinks rewrites a DSN (postgres:// or host=... port=...) so that
// each of its hosts is reached through the link listening for it: links
// maps host:port to the link. A host without a link is an error.
func ThroughLinks(dsn string, links map[string]*Link) (string, error) {
	hosts, err := Upstreams(dsn)
	if err != nil {
		return "", err
	}
	for i, h := range hosts {
		l, ok := links[h]
		if !ok {
			known := make([]string, 0, len(links))
			for k := range links {
				known = append(known, k)
			}
			sort.Strings(known)
			return "", fmt.Errorf("netfault: no link for host %s of the DSN (links: %s)", h, strings.Join(known, ", "))
		}
		hosts[i] = l.Addr
	}
	return WithHosts(dsn, hosts)
}

// Upstreams lists the host:port of each host of a DSN.
func Upstreams(dsn string) ([]string, error) {
	if !strings.Contains(dsn, "://") {
		return kvHosts(dsn)
	}
	_, hosts, _, err := splitHosts(dsn)
	return hosts, err
}

// WithHosts is dsn with hosts (host:port each) in place of its own.
func WithHosts(dsn string, hosts []string) (string, error) {
	if !strings.Contains(dsn, "://") {
		var hs, ps []string
		for _, h := range hosts {
			host, port, ok := strings.Cut(h, ":")
			if !ok {
				return "", fmt.Errorf("netfault: %q has no port", h)
			}
			hs, ps = append(hs, host), append(ps, port)
		}
		var out []string
		for _, f := range strings.Fields(dsn) {
			switch {
			case strings.HasPrefix(f, "host="):
				f = "host=" + strings.Join(hs, ",")
			case strings.HasPrefix(f, "port="):
				f = "port=" + strings.Join(ps, ",")
			}
			out = append(out, f)
		}
		return strings.Join(out, " "), nil
	}
	pre, _, post, err := splitHosts(dsn)
	if err != nil {
		return "", err
	}
	return pre + strings.Join(hosts, ",") + post, nil
}

// kvHosts reads host=a,b port=p,q of a keyword/value DSN (values without
// spaces or quotes, as pgprovider writes them).
func kvHosts(dsn string) ([]string, error) {
	var hs, ps []string
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "host="); ok {
			hs = strings.Split(v, ",")
		}
		if v, ok := strings.CutPrefix(f, "port="); ok {
			ps = strings.Split(v, ",")
		}
	}
	if len(hs) == 0 || len(ps) == 0 || (len(ps) != 1 && len(ps) != len(hs)) {
		return nil, fmt.Errorf("netfault: %q: want host= and port= (one, or one per host)", dsn)
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		p := ps[0]
		if len(ps) > 1 {
			p = ps[i]
		}
		out[i] = h + ":" + p
	}
	return out, nil
}

// splitHosts cuts postgres://user@h1:p1,h2:p2/db?x into its hosts and what
// comes before and after them (net/url refuses several hosts).
func splitHosts(dsn string) (pre string, hosts []string, post string, err error) {
	rest, ok := strings.CutPrefix(dsn, "postgres://")
	scheme := "postgres://"
	if !ok {
		rest, ok = strings.CutPrefix(dsn, "postgresql://")
		scheme = "postgresql://"
	}
	if !ok {
		return "", nil, "", fmt.Errorf("netfault: %q is not a postgres:// URL", dsn)
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	auth := rest[:end]
	at := strings.LastIndexByte(auth, '@')
	pre = scheme + auth[:at+1]
	for _, h := range strings.Split(auth[at+1:], ",") {
		if !strings.Contains(h, ":") {
			return "", nil, "", fmt.Errorf("netfault: host %q of %q has no port", h, dsn)
		}
		hosts = append(hosts, h)
	}
	return pre, hosts, rest[end:], nil
}
