package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/subspace/kbkit/kbcore"
)

// TestH1Answers: kb.command over the client's own HTTP/1.1 reads the
// answers net/http servers write: Content-Length, chunked, connection
// closing, errors; and it survives a server closing idle connections.
func TestH1Answers(t *testing.T) {
	var calls atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/trpc/kb.command", func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer tok" || !strings.Contains(string(body), `"payload":{"node":"n1"}`) {
			http.Error(w, "bad request: "+string(body), 400)
			return
		}
		switch n % 4 {
		case 0:
			w.Write([]byte(`{"result":{"data":{"seq":7}}}` + "\n"))
		case 1: // chunked
			w.Write([]byte(`{"result":{"data":`))
			w.(http.Flusher).Flush()
			w.Write([]byte(`{"seq":7,"duplicate":true}}}`))
		case 2:
			w.Header().Set("Connection", "close")
			w.Write([]byte(`{"result":{"data":{"seq":7}}}`))
		case 3:
			w.WriteHeader(409)
			w.Write([]byte(`{"error":{"message":"no","code":-32009,"data":{"code":"CONFLICT","httpStatus":409,"rejection":{"code":"node-not-found","message":"m"}}}}`))
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, "tok")
	if c.h1 == nil {
		t.Fatal("plain http base without h1")
	}
	env := kbcore.Envelope{ID: "c1", DeviceID: "d", PageID: "p", Type: "delete", Payload: []byte(`{"node":"n1"}`)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 1; i <= 12; i++ {
		if i == 9 {
			time.Sleep(200 * time.Millisecond) // the server closes the idle connections
		}
		ack, rej, err := c.Submit(ctx, env)
		switch n := calls.Load() % 4; {
		case err != nil:
			t.Fatalf("call %d: %v", i, err)
		case n == 3 && (rej == nil || rej.Code != "node-not-found"):
			t.Fatalf("call %d: rejection %+v", i, rej)
		case n != 3 && (ack.Seq != 7 || ack.Duplicate != (n == 1)):
			t.Fatalf("call %d (%d): ack %+v", i, n, ack)
		}
	}
	if New("https://example.invalid", "").h1 != nil || New("http://h/base", "").h1 != nil {
		t.Fatal("h1 for https or a base with a path")
	}
}
