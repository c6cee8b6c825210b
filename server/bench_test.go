package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/subspace/kbkit/internal/gcfloor"
	"github.com/subspace/kbkit/server/pgprovider"
	"github.com/subspace/kbkit/wire"
)

// BenchmarkCommandHTTP is kb.command over HTTP end to end (8 writers, each
// on its own page, one subscriber per page): the server's work per command
// with PostgreSQL, as allocations and time per command; gc=floor with the
// heap floor kbkit serve runs with (internal/gcfloor), gc=100 without.
func BenchmarkCommandHTTP(b *testing.B) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		b.Skip("GOGC or GOMEMLIMIT set: gc=floor would be gc=100")
	}
	in := newInstance(b, pgprovider.ForTest(b), Options{})
	c := pair(b, in, "bench")
	const writers = 8
	pages := make([]string, writers)
	for i := range pages {
		pages[i] = c.newPage()
	}
	for _, floor := range []bool{true, false} {
		name := "gc=100"
		if floor {
			name = "gc=floor"
		}
		b.Run(name, func(b *testing.B) {
			if floor {
				defer gcfloor.Start(gcfloor.Default)()
			}
			runtime.GC()
			benchCommands(b, in, c, pages)
		})
	}
}

func benchCommands(b *testing.B, in *instance, c client, pages []string) {
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(len(pages))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		page := pages[int(next.Add(1)-1)%len(pages)]
		hc := &http.Client{}
		for i := 0; pb.Next(); i++ {
			body := c.envelope(uuid.NewString(), page, "edit-text", map[string]any{"node": "n", "text": fmt.Sprint("text ", i)})
			req, _ := http.NewRequest("POST", in.ts.URL+"/trpc/kb.command", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+c.dev.Token)
			res, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Errorf("status %d", res.StatusCode)
				return
			}
		}
	})
}

// kb.command's hand-written answer is what json.Marshal writes.
func TestCommandAnswerEncoding(t *testing.T) {
	for _, r := range []wire.CommandResult{{Seq: 1}, {Seq: 0}, {Seq: 9007199254740993, Duplicate: true}, {Seq: -3}} {
		var e successEnvelope
		e.Result.Data = r
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCommandAnswer(nil, r); string(got) != string(want)+"\n" {
			t.Errorf("%+v: %s, want %s", r, got, want)
		}
	}
}
