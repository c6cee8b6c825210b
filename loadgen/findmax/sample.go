package findmax

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/subspace/kbkit/internal/cputime"
)

// machineSample is the machine's CPU time so far, in seconds of all cores.
type machineSample struct {
	busy, steal float64
	cores       int
	ok          bool
}

// schedMetric is the Go runtime's distribution of the time goroutines
// spent runnable before running: the time they waited for a CPU.
const schedMetric = "/sched/latencies:seconds"

// sample is what a step reads at the start and at the end of its load.
type sample struct {
	at      time.Time
	proc    time.Duration
	machine machineSample
	sched   *metrics.Float64Histogram
}

func takeSample() sample {
	s := sample{at: time.Now(), proc: cputime.Self()}
	s.machine, s.machine.ok = readMachine()
	m := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(m)
	if m[0].Value.Kind() == metrics.KindFloat64Histogram {
		s.sched = m[0].Value.Float64Histogram()
	}
	return s
}

// schedQuantile is the q-quantile of the waits recorded between a and b
// (the upper bound of its bucket), -1 when none was recorded.
func schedQuantile(a, b *metrics.Float64Histogram, q float64) time.Duration {
	if a == nil || b == nil || len(a.Counts) != len(b.Counts) {
		return -1
	}
	var total uint64
	d := make([]uint64, len(b.Counts))
	for i := range b.Counts {
		d[i] = b.Counts[i] - a.Counts[i]
		total += d[i]
	}
	if total == 0 {
		return -1
	}
	want := uint64(math.Ceil(q * float64(total)))
	var cum uint64
	for i, c := range d {
		cum += c
		if cum >= want {
			hi := b.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = b.Buckets[i]
			}
			return time.Duration(hi * float64(time.Second))
		}
	}
	return -1
}

// usableCores is how many cores this process's goroutines can run on at
// once.
func usableCores() float64 {
	return float64(min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
}

// serverCPU reads process_cpu_seconds_total from a Prometheus text page
// (the reference server's /metrics, spec/PROTOCOL.md section 9).
func serverCPU(ctx context.Context, url string) (float64, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, time.Time{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		return 0, at, fmt.Errorf("%s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, at, fmt.Errorf("%s: process_cpu_seconds_total %q", url, v)
			}
			return f, at, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, at, err
	}
	return 0, at, fmt.Errorf("%s has no process_cpu_seconds_total", url)
}
