package main

import (
	"os"
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
