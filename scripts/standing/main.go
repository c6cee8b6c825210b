// Command standing writes the one current-standing table of kbkit's
// benchmark into docs/load-testing.md, generated from the newest results
// file under loadgen/results that has checks (a `make bench-server`
// results.json, or one kept from the bench history): every figure comes
// from that file, none is typed into the page.
//
//	go run ./scripts/standing          # rewrite the table in docs/load-testing.md
//	go run ./scripts/standing -print   # print it instead
//
// The table sits between the lines <!-- standing:begin --> and
// <!-- standing:end --> of the page; a test holds the committed page to
// what this command generates. Exit status 2 on any error, with the page
// left as it was.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
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
}

func main() {
	print := flag.Bool("print", false, "print the table instead of rewriting the page")
	results := flag.String("results", "loadgen/results", "directory of results files")
	page := flag.String("page", "docs/load-testing.md", "the page holding the table")
	flag.Parse()
	if err := run(*results, *page, *print); err != nil {
		fmt.Fprintln(os.Stderr, "standing:", err)
		os.Exit(2)
	}
}

func run(results, page string, print bool) error {
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
	return os.WriteFile(page, []byte(out), 0o644)
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
		how = append(how, "on "+r.Commit)
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
	}
	return b.String(), nil
}

func num(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
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
