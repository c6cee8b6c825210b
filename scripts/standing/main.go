// Command standing writes the one current-standing table of kbkit's
// benchmark into docs/load-testing.md, generated from the newest results
// file under loadgen/results that has checks: every figure comes from
// that file, none is typed into the page. It reads both shapes a results
// file has: `make bench-server`'s OUT/results.json as the script writes
// it (the run's date, commit and cores under `host`, the floors of
// `kbkit bench floor` at the top level), so that keeping a run is copying
// that file into loadgen/results, and the kept history's (date, commit,
// command and the floors under `machine`).
//
//	go run ./scripts/standing          # rewrite the table, and docs/benchmarks.md
//	go run ./scripts/standing -print   # print the table instead
//
// The table sits between the lines <!-- standing:begin --> and
// <!-- standing:end --> of the page. The benchmark page, docs/benchmarks.md,
// is what scripts/bench-page.sh writes from the same file (which must then
// be bench-server's shape; jq is needed). Tests hold both committed pages
// to what this command generates. Exit status 2 on any error, with the
// pages left as they were.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	begin = "<!-- standing:begin -->"
	end   = "<!-- standing:end -->"
)

// Result is the part of a results file the table reads.
type Result struct {
	Date       string  `json:"date"`
	Title      string  `json:"title"`
	Commit     string  `json:"commit"`
	Command    string  `json:"command"`
	ExitStatus *int    `json:"exit_status"`
	Machine    Machine `json:"machine"`
	Checks     []Check `json:"checks"`

	// bench-server's OUT/results.json: the run's machine and code, and
	// the floors as kbkit bench floor measured them.
	Host   *Host        `json:"host"`
	Floors *BenchFloors `json:"floors"`
}

// Host is where and on what a bench-server run ran.
type Host struct {
	Date   string `json:"date"`
	Commit string `json:"commit"`
	Cores  int    `json:"cores"`
}

// BenchFloors is the part of kbkit bench floor's report the table shows.
type BenchFloors struct {
	NProc    int `json:"nproc"`
	Loopback []struct {
		Sockets    int      `json:"sockets"`
		USPerWrite *float64 `json:"us_per_write"`
	} `json:"loopback"`
	FSync *struct {
		USPerOp *float64 `json:"us_per_op"`
	} `json:"fsync"`
	HTTP *struct {
		ServerUS *float64 `json:"server_us_per_request"`
		ClientUS *float64 `json:"client_us_per_request"`
	} `json:"http"`
	RoundTrip *struct {
		Mean *float64 `json:"us_per_round_trip"`
		P50  *float64 `json:"p50_us"`
		P99  *float64 `json:"p99_us"`
	} `json:"roundtrip"`
}

// Machine holds the machine's floors as the run measured them.
type Machine struct {
	Cores  int                        `json:"cores"`
	Floors map[string]json.RawMessage `json:"floors"`
}

// Check is one judged figure, as bench-server's results.json has it.
type Check struct {
	Name  string   `json:"name"`
	Kind  string   `json:"kind"`
	Value *float64 `json:"value"`
	Op    string   `json:"op"`
	Limit *float64 `json:"limit"`
	Met   *bool    `json:"met"`
	What  string   `json:"what"`
	// OutOfReach: missed, but the machine's floor alone is past the bar
	// (scripts/lib/verdict.jq).
	OutOfReach bool `json:"out_of_reach"`
}

// normalize fills the kept history's fields from bench-server's own
// shape, where the file has that shape; a field the file sets itself
// wins.
func (r *Result) normalize() error {
	if h := r.Host; h != nil {
		if r.Date == "" {
			r.Date = h.Date
		}
		if r.Commit == "" {
			r.Commit = h.Commit
		}
		if r.Machine.Cores == 0 {
			r.Machine.Cores = h.Cores
		}
	}
	f := r.Floors
	if f == nil || len(r.Machine.Floors) > 0 {
		return nil
	}
	if r.Machine.Cores == 0 {
		r.Machine.Cores = f.NProc
	}
	floors := map[string]any{}
	if f.FSync != nil && f.FSync.USPerOp != nil {
		floors["fdatasync_us"] = round1(*f.FSync.USPerOp)
	}
	if f.HTTP != nil && f.HTTP.ServerUS != nil {
		floors["http_server_us"] = round1(*f.HTTP.ServerUS)
	}
	if f.HTTP != nil && f.HTTP.ClientUS != nil {
		floors["http_client_us"] = round1(*f.HTTP.ClientUS)
	}
	var loop []map[string]any
	for _, l := range f.Loopback {
		if l.USPerWrite != nil {
			loop = append(loop, map[string]any{"sockets": l.Sockets, "us": round1(*l.USPerWrite)})
		}
	}
	if len(loop) > 0 {
		floors["loopback_write_us"] = loop
	}
	if rt := f.RoundTrip; rt != nil && rt.Mean != nil {
		m := map[string]any{"mean": round1(*rt.Mean)}
		if rt.P50 != nil {
			m["p50"] = *rt.P50
		}
		if rt.P99 != nil {
			m["p99"] = *rt.P99
		}
		floors["round_trip_us"] = m
	}
	r.Machine.Floors = map[string]json.RawMessage{}
	for k, v := range floors {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		r.Machine.Floors[k] = b
	}
	return nil
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func main() {
	print := flag.Bool("print", false, "print the table instead of rewriting the page")
	results := flag.String("results", "loadgen/results", "directory of results files")
	page := flag.String("page", "docs/load-testing.md", "the page holding the table")
	bench := flag.String("bench-page", "docs/benchmarks.md", "the benchmark page written from the newest results file (scripts/bench-page.sh)")
	flag.Parse()
	if err := run(*results, *page, *bench, *print); err != nil {
		fmt.Fprintln(os.Stderr, "standing:", err)
		os.Exit(2)
	}
}

func run(results, page, bench string, print bool) error {
	table, err := Render(results, path.Join("..", filepath.ToSlash(results)))
	if err != nil {
		return err
	}
	if print {
		fmt.Print(table)
		return nil
	}
	doc, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	out, err := Splice(string(doc), table)
	if err != nil {
		return fmt.Errorf("%s: %w", page, err)
	}
	name, _, err := Newest(results)
	if err != nil {
		return err
	}
	text, err := BenchPage(".", filepath.Join(results, name))
	if err != nil {
		return err
	}
	if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
		return err
	}
	return os.WriteFile(bench, []byte(text), 0o644)
}

// BenchPage returns the benchmark page scripts/bench-page.sh (under root)
// writes from file, which must be make bench-server's results.json as the
// script wrote it (with its phases); jq is needed.
func BenchPage(root, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return "", err
	}
	var shape struct {
		Phases map[string]json.RawMessage `json:"phases"` // one round
		Rounds []struct {
			Phases map[string]json.RawMessage `json:"phases"`
		} `json:"round_results"` // ROUNDS > 1
	}
	if err := json.Unmarshal(b, &shape); err != nil || len(shape.Phases) == 0 && (len(shape.Rounds) == 0 || len(shape.Rounds[0].Phases) == 0) {
		return "", fmt.Errorf("%s: not make bench-server's results.json (no phases): the benchmark page needs one", file)
	}
	tmp, err := os.MkdirTemp("", "standing-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	out := filepath.Join(tmp, "benchmarks.md")
	cmd := exec.Command("bash", "scripts/bench-page.sh", file, out)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scripts/bench-page.sh %s: %v\n%s", file, err, msg)
	}
	page, err := os.ReadFile(out)
	return string(page), err
}

// Newest returns the name of the newest results file of dir with checks:
// names start with the run's date (YYYY-MM-DD-), so the last in name
// order. A directory with none is an error.
func Newest(dir string) (string, Result, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", Result{}, err
	}
	sort.Strings(names)
	for i := len(names) - 1; i >= 0; i-- {
		b, err := os.ReadFile(names[i])
		if err != nil {
			return "", Result{}, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return "", Result{}, fmt.Errorf("%s: %w", names[i], err)
		}
		if err := r.normalize(); err != nil {
			return "", Result{}, fmt.Errorf("%s: %w", names[i], err)
		}
		if len(r.Checks) > 0 {
			return filepath.Base(names[i]), r, nil
		}
	}
	return "", Result{}, fmt.Errorf("no results file with checks in %s", dir)
}

// Render returns the standing table of the newest results file of dir,
// linking the file as link/NAME.
func Render(dir, link string) (string, error) {
	name, r, err := Newest(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The standing, from [%s](%s/%s)", name, link, name)
	var how []string
	if r.Command != "" {
		how = append(how, "`"+r.Command+"`")
	}
	if r.Commit != "" {
		how = append(how, "on "+shortCommit(r.Commit))
	}
	if r.Date != "" {
		how = append(how, r.Date)
	}
	if r.Machine.Cores > 0 {
		how = append(how, strconv.Itoa(r.Machine.Cores)+" cores")
	}
	if r.ExitStatus != nil {
		how = append(how, "exit status "+strconv.Itoa(*r.ExitStatus))
	}
	if len(how) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(how, ", "))
	}
	b.WriteString(":\n\n| figure | kind | measured | bar | verdict |\n|---|---|---|---|---|\n")
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Name, c.Kind, num(c.Value), bar(c), verdict(c))
	}
	if floors := floorList(r.Machine.Floors); floors != "" {
		fmt.Fprintf(&b, "\nThe machine's floors in that run: %s.\n", floors)
	} else {
		b.WriteString("\nThat run recorded no floors of the machine.\n")
	}
	return b.String(), nil
}

// num renders a figure to three decimals (three significant digits below
// 0.01), trailing zeros dropped: a results file of bench-server holds the
// medians unrounded.
func num(v *float64) string {
	if v == nil {
		return "n/a"
	}
	if *v != 0 && math.Abs(*v) < 0.01 {
		return strconv.FormatFloat(*v, 'g', 3, 64)
	}
	s := strconv.FormatFloat(*v, 'f', 3, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// shortCommit shortens a full commit hash to the 7 characters git shows.
func shortCommit(c string) string {
	if len(c) == 40 {
		return c[:7]
	}
	return c
}

func bar(c Check) string {
	if c.Limit == nil {
		return c.What
	}
	return c.Op + " " + num(c.Limit)
}

func verdict(c Check) string {
	switch {
	case c.Met == nil:
		return "context"
	case *c.Met:
		return "met"
	case c.OutOfReach:
		return "missed (out of reach: the machine's floor alone is past the bar)"
	default:
		return "missed"
	}
}

// floorList renders the floors as "name value, ...", in name order.
func floorList(f map[string]json.RawMessage) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		var c bytes.Buffer
		if json.Compact(&c, f[k]) != nil {
			c.Reset()
			c.Write(f[k])
		}
		parts = append(parts, "`"+k+"` "+c.String())
	}
	return strings.Join(parts, ", ")
}

// Splice puts table between the begin and end markers of doc.
func Splice(doc, table string) (string, error) {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", errors.New("no " + begin + " ... " + end + " lines")
	}
	return doc[:i+len(begin)] + "\n" + table + doc[j:], nil
}
