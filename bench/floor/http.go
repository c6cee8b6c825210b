package floor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPConfig is one HTTP round-trip measurement.
type HTTPConfig struct {
	Rate        int           `json:"rate"`        // requests per second, all clients together
	Concurrency int           `json:"concurrency"` // client goroutines (and kept-alive connections)
	RequestSize int           `json:"request_size"`
	ReplySize   int           `json:"reply_size"`
	Duration    time.Duration `json:"duration"`
	Warmup      time.Duration `json:"warmup"`
}

// HTTPResult is what client and server spent per request.
type HTTPResult struct {
	Rate         int     `json:"rate"`
	Concurrency  int     `json:"concurrency"`
	RequestSize  int     `json:"request_size"`
	ReplySize    int     `json:"reply_size"`
	Seconds      float64 `json:"seconds"`
	Requests     int64   `json:"requests"`
	Served       int64   `json:"served"`
	RequestRate  float64 `json:"requests_per_second"`
	ClientCPU    float64 `json:"client_cpu_seconds"`
	ServerCPU    float64 `json:"server_cpu_seconds"`
	USPerRequest float64 `json:"client_us_per_request"`
	USPerServed  float64 `json:"server_us_per_request"`
}

func (c HTTPConfig) check() error {
	if c.Rate < 1 || c.Concurrency < 1 || c.RequestSize < 0 || c.ReplySize < 0 || c.Duration <= 0 || c.Warmup < 0 {
		return fmt.Errorf("%w: http needs rate, concurrency and duration > 0 (got %+v)", errConfig, c)
	}
	return nil
}

// HTTP measures the CPU of a loopback net/http POST on each side, client
// and server in their own processes.
func HTTP(ctx context.Context, spawn Spawner, cfg HTTPConfig) (HTTPResult, error) {
	res := HTTPResult{Rate: cfg.Rate, Concurrency: cfg.Concurrency, RequestSize: cfg.RequestSize, ReplySize: cfg.ReplySize}
	if err := cfg.check(); err != nil {
		return res, err
	}
	d, _, err := pair(ctx, spawn, roleHTTPServer, cfg, roleHTTPClient,
		func(addr string) any { return httpClientConfig{HTTPConfig: cfg, URL: "http://" + addr + "/"} }, cfg.Warmup, cfg.Duration)
	if err != nil {
		return res, err
	}
	res.Seconds, res.Requests, res.Served, res.ClientCPU, res.ServerCPU = d.Seconds, d.Count[0], d.Count[1], d.CPU[0], d.CPU[1]
	if res.Requests <= 0 || res.Served <= 0 {
		return res, fmt.Errorf("floor: http completed no requests in %.1fs", res.Seconds)
	}
	res.RequestRate = float64(res.Requests) / res.Seconds
	res.USPerRequest = 1e6 * res.ClientCPU / float64(res.Requests)
	res.USPerServed = 1e6 * res.ServerCPU / float64(res.Served)
	return res, nil
}

func httpServer(cfg HTTPConfig, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	reply := bytes.Repeat([]byte("r"), cfg.ReplySize)
	var served atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
		served.Add(1)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	if err := writeJSON(out, map[string]string{"addr": ln.Addr().String()}); err != nil {
		return err
	}
	return commands(in, func(cmd string) error {
		if cmd == "mark" {
			return writeJSON(out, newMark(served.Load()))
		}
		return nil
	})
}

type httpClientConfig struct {
	HTTPConfig
	URL string `json:"url"`
}

// httpClient runs cfg.Concurrency goroutines, each paced at
// cfg.Rate/cfg.Concurrency requests per second, on kept-alive connections.
func httpClient(cfg httpClientConfig, in io.Reader, out io.Writer) error {
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	body := bytes.Repeat([]byte("q"), cfg.RequestSize)
	post := func() error {
		resp, err := client.Post(cfg.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil
	}
	if err := post(); err != nil { // one connection up before "ready"
		return err
	}
	if err := writeJSON(out, map[string]bool{"ready": true}); err != nil {
		return err
	}
	var requests atomic.Int64
	run := func(stop <-chan struct{}) error {
		var (
			wg     sync.WaitGroup
			once   sync.Once
			failed error
		)
		// The first failure ends every client goroutine, so that the next
		// mark reports it.
		quit := make(chan struct{})
		ended := func() bool {
			select {
			case <-stop:
				return true
			case <-quit:
				return true
			default:
				return false
			}
		}
		t0 := time.Now()
		interval := time.Duration(float64(time.Second) * float64(cfg.Concurrency) / float64(cfg.Rate))
		for w := range cfg.Concurrency {
			wg.Go(func() {
				next := t0.Add(interval * time.Duration(w) / time.Duration(cfg.Concurrency))
				for !ended() {
					if d := time.Until(next); d > 0 {
						time.Sleep(d)
					}
					next = next.Add(interval)
					if err := post(); err != nil {
						once.Do(func() { failed = err; close(quit) })
						return
					}
					requests.Add(1)
				}
			})
		}
		wg.Wait()
		return failed
	}
	return drive(in, out, run, nil, func() mark { return newMark(requests.Load()) })
}
