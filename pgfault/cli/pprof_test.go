package cli

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// kbkit pg soak --pprof serves profiles on loopback only, and its stop
// closes the listener.
func TestServePprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "example.com:0", "nohost"} {
		if stop, err := servePprof(addr); err == nil {
			stop()
			t.Errorf("servePprof(%q) served; want a refusal", addr)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop, err := servePprof(addr)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /debug/pprof/: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	stop()
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("still listening after stop")
	}
}
