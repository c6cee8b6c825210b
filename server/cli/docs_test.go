package cli

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docs/testing-servers.md's table of limits states each default as the
// flag of kbkit serve has it.
func TestDocsStateTheLimits(t *testing.T) {
	b, err := os.ReadFile("../../docs/testing-servers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| limit | default | flag |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/testing-servers.md has no table of limits")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	flags := NewServeCommand().Flags()
	paren := regexp.MustCompile(`\s*\([^)]*\)`)
	flagName := regexp.MustCompile("`--([a-z-]+)`")
	rows := 0
	for _, row := range strings.Split(strings.TrimSpace(table), "\n") {
		cols := strings.Split(strings.Trim(row, "|"), "|")
		if len(cols) != 3 {
			t.Fatalf("row %q: want 3 columns", row)
		}
		defs := strings.Split(strings.TrimSpace(paren.ReplaceAllString(cols[1], "")), " / ")
		var names []string
		for _, m := range flagName.FindAllStringSubmatch(cols[2], -1) {
			names = append(names, m[1])
		}
		if len(defs) == 1 && defs[0] == "off" {
			defs = []string{"0"} // the first flag's 0 turns it off
		}
		if len(names) < len(defs) || len(defs) == 0 {
			t.Errorf("row %q: %d defaults for the flags %v", row, len(defs), names)
			continue
		}
		for i, d := range defs {
			f := flags.Lookup(names[i])
			if f == nil {
				t.Errorf("row %q: kbkit serve has no --%s", row, names[i])
				continue
			}
			rows++
			if !sameDefault(d, f.Value.Type(), f.DefValue) {
				t.Errorf("docs/testing-servers.md says --%s defaults to %q; the flag's default is %s", names[i], d, f.DefValue)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("only %d limits checked", rows)
	}
}

// sameDefault compares a default as the docs write it ("256 KiB", "30 s",
// "500 ms", "10,000", "30 a minute") with a flag's DefValue.
func sameDefault(doc, typ, def string) bool {
	doc = strings.TrimSuffix(strings.ReplaceAll(doc, ",", ""), " a minute")
	switch typ {
	case "duration":
		want, err := time.ParseDuration(strings.ReplaceAll(doc, " ", ""))
		got, err2 := time.ParseDuration(def)
		return err == nil && err2 == nil && want == got
	default:
		n, unit, _ := strings.Cut(doc, " ")
		v, err := strconv.ParseFloat(n, 64)
		if unit == "KiB" {
			v *= 1024
		} else if unit != "" {
			return false
		}
		got, err2 := strconv.ParseFloat(def, 64)
		return err == nil && err2 == nil && v == got
	}
}
