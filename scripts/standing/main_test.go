package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed page holds exactly the table the command generates from
// the committed results.
func TestPageHoldsTheGeneratedStanding(t *testing.T) {
	table, err := Render("../../loadgen/results", "../loadgen/results")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/load-testing.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(doc), table)
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Errorf("docs/load-testing.md's standing is not what `go run ./scripts/standing` generates:\n%s", table)
	}
}

// The committed benchmark page is what scripts/bench-page.sh writes from
// the newest kept results file.
func TestBenchmarksPageIsGenerated(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is needed to generate the benchmark page (scripts/bench-page.sh)")
	}
	name, _, err := Newest("../../loadgen/results")
	if err != nil {
		t.Fatal(err)
	}
	want, err := BenchPage("../..", filepath.Join("loadgen/results", name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/benchmarks.md is not what `go run ./scripts/standing` generates from loadgen/results/%s", name)
	}
	if _, err := BenchPage("../..", "go.mod"); err == nil {
		t.Error("a file that is not bench-server's results.json gave a page")
	}
}

func TestNewestWithChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Newest(dir); err == nil {
		t.Fatal("an empty directory gave no error")
	}
	write("2026-01-01-a.json", `{"date":"2026-01-01","checks":[{"name":"x","kind":"target","value":2,"op":">=","limit":1,"met":true}]}`)
	write("2026-01-03-c.json", `{"date":"2026-01-03","tables":[]}`)
	write("2026-01-02-b.json", `{"date":"2026-01-02","command":"make bench-server","checks":[{"name":"y","kind":"goal","value":3,"op":"<=","limit":1,"met":false}],"machine":{"cores":2,"floors":{"fdatasync_us":[106]}}}`)
	name, _, err := Newest(dir)
	if err != nil || name != "2026-01-02-b.json" {
		t.Fatalf("Newest = %q, %v; want the newest with checks, 2026-01-02-b.json", name, err)
	}
	table, err := Render(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[2026-01-02-b.json](r/2026-01-02-b.json)", "| y | goal | 3 | <= 1 | missed |", "`fdatasync_us` [106]"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	write("2026-01-04-d.json", `{not json`)
	if _, _, err := Newest(dir); err == nil || !strings.Contains(err.Error(), "2026-01-04-d.json") {
		t.Errorf("a malformed file: %v", err)
	}
}

func TestSpliceNeedsMarkers(t *testing.T) {
	if _, err := Splice("no markers here", "t"); err == nil {
		t.Fatal("no error without markers")
	}
	got, err := Splice("a\n"+begin+"\nold\n"+end+"\nz\n", "new\n")
	if err != nil || got != "a\n"+begin+"\nnew\n"+end+"\nz\n" {
		t.Fatalf("Splice = %q, %v", got, err)
	}
}

// A run kept as the docs say (bench-server's OUT/results.json copied into
// the results directory) renders with its date, commit, cores, floors
// and every check: testdata/bench-server-results.json is such a file,
// trimmed to a few checks and one round.
func TestBenchServerResultsAsWritten(t *testing.T) {
	fixture, err := os.ReadFile("testdata/bench-server-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Host   map[string]any   `json:"host"`
		Checks []map[string]any `json:"checks"`
	}
	if err := json.Unmarshal(fixture, &raw); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := `{"date":"2026-01-01","commit":"abc1234","command":"make bench-server","machine":{"cores":4,"floors":{}},"checks":[{"name":"x","kind":"target","value":2,"op":">=","limit":1,"met":true}]}`
	if err := os.WriteFile(filepath.Join(dir, "2026-01-01-bench-server.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "2026-12-08-bench-server.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	table, err := Render(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	commit := raw.Host["commit"].(string)
	wants := []string{
		"[2026-12-08-bench-server.json](r/2026-12-08-bench-server.json)",
		"on " + commit[:7] + ", " + raw.Host["date"].(string) + ", " + fmt.Sprint(raw.Host["cores"]) + " cores",
		"`fdatasync_us` 101.3", "`http_server_us` 54.3", "`http_client_us` 76.3",
		"`loopback_write_us` [{\"sockets\":200,\"us\":8.5},{\"sockets\":2000,\"us\":9.1}]",
		"`round_trip_us` {\"mean\":57.3,\"p50\":59,\"p99\":93}",
	}
	verdicts := map[string]int{}
	for _, c := range raw.Checks {
		v, l := c["value"].(float64), c["limit"].(float64)
		verdict := "missed"
		switch {
		case c["met"].(bool):
			verdict = "met"
		case c["out_of_reach"] == true:
			verdict = "missed (out of reach"
		}
		verdicts[verdict]++
		wants = append(wants, fmt.Sprintf("| %s | %s | %s | %s %s | %s", c["name"], c["kind"], num(&v), c["op"], num(&l), verdict))
	}
	if len(verdicts) != 3 {
		t.Fatalf("the fixture's checks have verdicts %v: want met, missed and out of reach", verdicts)
	}
	for _, want := range wants {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if n := strings.Count(table, "\n| ") - 1; n != len(raw.Checks) {
		t.Errorf("table has %d check rows, the file %d:\n%s", n, len(raw.Checks), table)
	}

	// The kept history's shape, without floors, says so.
	if err := os.Remove(filepath.Join(dir, "2026-12-08-bench-server.json")); err != nil {
		t.Fatal(err)
	}
	table, err = Render(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(`make bench-server`, on abc1234, 2026-01-01, 4 cores)", "| x | target | 2 | >= 1 | met |", "recorded no floors"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{1.5: "1.5", 0.992534305184741: "0.993", 5032.5: "5032.5", 20: "20", 0.0047: "0.0047", 0: "0", 13.385: "13.385"} {
		if got := num(&v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
