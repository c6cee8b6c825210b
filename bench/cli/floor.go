package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/subspace/kbkit/bench/floor"
)

// NewCommand returns `kbkit bench` with its floor subcommand.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure this machine's limits under the benchmarks' figures",
	}
	cmd.AddCommand(newFloorCmd())
	return cmd
}

// floorReport is what `kbkit bench floor` prints (--json: one object).
type floorReport struct {
	NumCPU    int                    `json:"nproc"`
	Loopback  []floor.LoopbackResult `json:"loopback,omitempty"`
	Fsync     *floor.FsyncResult     `json:"fsync,omitempty"`
	HTTP      *floor.HTTPResult      `json:"http,omitempty"`
	RoundTrip *floor.RoundTripResult `json:"roundtrip,omitempty"`
}

// floorFlags are the flags of `kbkit bench floor`.
type floorFlags struct {
	floors        []string
	sockets       []int
	rate, size    int
	duration      time.Duration
	warmup        time.Duration
	fsyncDir      string
	fsyncDuration time.Duration
	fsyncSize     int
	httpRate      int
	httpConc      int
	rtSize        int
	asJSON        bool
	childRole     string
	childConfig   string
}

// allFloors are the floors, in the order they are measured.
var allFloors = []string{"loopback", "fsync", "http", "roundtrip"}

func newFloorCmd() *cobra.Command {
	var o floorFlags
	cmd := &cobra.Command{
		Use:   "floor",
		Short: "Measure the CPU of a loopback write and read, the fdatasync rate, an HTTP round trip and the latency of a loopback round trip",
		Long: `Measures the floors under kbkit serve's and kbkit loadgen's figures on
this machine, with the cheapest programs that do the same work:

  loopback  N TCP sockets on 127.0.0.1; one process writes --size-byte
            messages round-robin at --rate per second in total, another
            reads them. Each reports its own CPU (getrusage): µs per write
            (the floor under the server's CPU per fan-out echo, one
            WebSocket write per window) and per message read (under the
            generator's). On loopback the writer's system time includes the
            TCP work of both ends. One measurement per --sockets count.
  fsync     write 8 KiB + fdatasync in a loop on a preallocated file in
            --fsync-dir (put it on the disk of PostgreSQL's data directory):
            the ceiling on the commits per second of one WAL writer.
  http      a net/http POST of 300 bytes with a 50-byte reply over
            kept-alive loopback connections at --http-rate per second,
            client and server in their own processes: CPU per request each.
  roundtrip --roundtrip-size bytes and the same back on one loopback TCP
            connection between two processes, the next sent when the answer
            is in: µs per round trip (mean, p50, p99) and CPU of each end.
            Nothing else runs, so it is what waking a process that waits on
            a socket costs, twice; every closed-loop caller (pgbench's
            client once per statement, an editor once per command) pays it.

The figures are measurements of this machine at this moment: on shared
cores, run them beside the benchmark they explain.`,
		Example: `  kbkit bench floor
  kbkit bench floor --floors loopback --sockets 200,2000 --rate 20000 --size 200 --duration 10s
  kbkit bench floor --floors fsync --fsync-dir /var/lib/postgresql/15/main --json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if o.childRole != "" {
				return floor.Child(o.childRole, o.childConfig, os.Stdin, c.OutOrStdout())
			}
			return runFloors(c, o)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&o.floors, "floors", []string{"loopback", "fsync", "http", "roundtrip"}, "the floors to measure: loopback, fsync, http, roundtrip")
	fl.IntSliceVar(&o.sockets, "sockets", []int{200, 2000}, "loopback: socket counts, one measurement each")
	fl.IntVar(&o.rate, "rate", 20000, "loopback: messages per second over all sockets")
	fl.IntVar(&o.size, "size", 200, "loopback: bytes per message")
	fl.DurationVar(&o.duration, "duration", 10*time.Second, "loopback, http and roundtrip: measured time of each measurement")
	fl.DurationVar(&o.warmup, "warmup", time.Second, "loopback, http and roundtrip: unmeasured time before each")
	fl.StringVar(&o.fsyncDir, "fsync-dir", "", "fsync: a directory on the disk to measure (default the temp directory)")
	fl.DurationVar(&o.fsyncDuration, "fsync-duration", 3*time.Second, "fsync: measured time")
	fl.IntVar(&o.fsyncSize, "fsync-size", 8192, "fsync: bytes written before each fdatasync")
	fl.IntVar(&o.httpRate, "http-rate", 2000, "http: requests per second over all connections")
	fl.IntVar(&o.httpConc, "http-concurrency", 8, "http: client goroutines, each on its own kept-alive connection")
	fl.IntVar(&o.rtSize, "roundtrip-size", 64, "roundtrip: bytes each way")
	fl.BoolVar(&o.asJSON, "json", false, "print one JSON object on stdout (the text goes to stderr)")
	fl.StringVar(&o.childRole, "child", "", "internal: run one end of a measurement")
	fl.StringVar(&o.childConfig, "child-config", "", "internal: its configuration")
	_ = fl.MarkHidden("child")
	_ = fl.MarkHidden("child-config")
	return cmd
}

// runFloors measures the floors o asks for, printing a line per
// measurement (on stderr with --json, the report then on stdout).
func runFloors(c *cobra.Command, o floorFlags) error {
	for _, f := range o.floors {
		if !slices.Contains(allFloors, f) {
			return fmt.Errorf("--floors: unknown floor %q (loopback, fsync, http, roundtrip)", f)
		}
	}
	spawn, err := selfSpawner()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt)
	defer stop()
	rep := floorReport{NumCPU: runtime.NumCPU()}
	text := c.OutOrStdout()
	if o.asJSON {
		text = c.ErrOrStderr() // progress; the object goes to stdout
	}
	if slices.Contains(o.floors, "loopback") {
		for _, n := range o.sockets {
			r, err := floor.Loopback(ctx, spawn, floor.LoopbackConfig{Sockets: n, Rate: o.rate, Size: o.size, Duration: o.duration, Warmup: o.warmup})
			if err != nil {
				return err
			}
			rep.Loopback = append(rep.Loopback, r)
			printLoopback(text, r)
		}
	}
	if slices.Contains(o.floors, "fsync") {
		r, err := floor.Fsync(ctx, floor.FsyncConfig{Dir: o.fsyncDir, Size: o.fsyncSize, Duration: o.fsyncDuration})
		if err != nil {
			return err
		}
		rep.Fsync = &r
		fmt.Fprintf(text, "fdatasync in %s (%d-byte writes, %.1fs): %.0f per second, %.0f µs each\n",
			r.Dir, r.Size, r.Seconds, r.OpsPerSec, r.USPerOp)
	}
	if slices.Contains(o.floors, "http") {
		r, err := floor.HTTP(ctx, spawn, floor.HTTPConfig{Rate: o.httpRate, Concurrency: o.httpConc, RequestSize: 300, ReplySize: 50, Duration: o.duration, Warmup: o.warmup})
		if err != nil {
			return err
		}
		rep.HTTP = &r
		fmt.Fprintf(text, "HTTP POST %d B -> %d B, %d kept-alive connections, %.0f requests/s (%.1fs): client %.1f µs, server %.1f µs of CPU per request\n",
			r.RequestSize, r.ReplySize, r.Concurrency, r.RequestRate, r.Seconds, r.USPerRequest, r.USPerServed)
	}
	if slices.Contains(o.floors, "roundtrip") {
		r, err := floor.RoundTrip(ctx, spawn, floor.RoundTripConfig{Size: o.rtSize, Duration: o.duration, Warmup: o.warmup})
		if err != nil {
			return err
		}
		rep.RoundTrip = &r
		fmt.Fprintf(text, "loopback round trip, %d B each way, one at a time (%.1fs, %d round trips): %.1f µs each (p50 %.0f, p99 %.0f); client %.1f µs, server %.1f µs of CPU per round trip\n",
			r.Size, r.Seconds, r.RoundTrips, r.USMean, r.USP50, r.USP99, r.ClientUS, r.ServerUS)
	}
	if o.asJSON {
		return json.NewEncoder(c.OutOrStdout()).Encode(rep)
	}
	return nil
}

// selfSpawner re-executes this binary as a floor's child process.
func selfSpawner() (floor.Spawner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench floor: finding this executable to run the measurement's other end: %w", err)
	}
	return func(role, config string) *exec.Cmd {
		cmd := exec.CommandContext(context.Background(), exe, "bench", "floor", "--child", role, "--child-config", config)
		cmd.Stderr = os.Stderr
		return cmd
	}, nil
}

func printLoopback(w io.Writer, r floor.LoopbackResult) {
	fmt.Fprintf(w, "loopback TCP, %d sockets, %d-byte messages at %.0f/s (%.1fs, %d writes): sender %.1f µs of CPU per write, receiver %.1f µs per message read\n",
		r.Sockets, r.Size, r.WriteRate, r.Seconds, r.Writes, r.USPerWrite, r.USPerRead)
}
