package kbkit

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"go.k6.io/k6/lib"
	"go.k6.io/k6/metrics"
)

// block is the body of the declaration that starts with head in the .d.ts
// (up to the closing brace at its indent).
func block(t *testing.T, dts, head string) string {
	t.Helper()
	i := strings.Index(dts, head)
	if i < 0 {
		t.Fatalf("index.d.ts declares no %q", head)
	}
	rest := dts[i:]
	j := strings.Index(rest, "\n  }")
	if j < 0 {
		t.Fatalf("index.d.ts: %q is not closed", head)
	}
	return rest[:j]
}

// declared lists the members of a .d.ts block: a name at the start of a
// line, followed by "(" (a method) or ":" (a property).
func declared(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:readonly\s+)?([a-zA-Z]+)\??[(:]`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// jsName is how k6 shows a Go method to JS: its first letter lowered.
func jsName(s string) string {
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// TestTypesDescribeTheBinding: index.d.ts declares exactly what the Go
// binding exports: the module's functions, the workloads, and a window's
// methods.
func TestTypesDescribeTheBinding(t *testing.T) {
	b, err := os.ReadFile("index.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	dts := string(b)

	v := newVU(t, New(), make(chan metrics.SampleContainer, 100), 1, lib.Options{})
	exports := v.mi.Exports().Default.(map[string]any)
	var want []string
	for name := range exports {
		want = append(want, name)
	}
	sort.Strings(want)
	if got := declared(block(t, dts, "const kbkit: {")); !reflect.DeepEqual(got, want) {
		t.Errorf("the default export declares %v, the binding exports %v", got, want)
	}
	for _, name := range want {
		if name == "workloads" {
			if !strings.Contains(dts, "export const workloads: Workloads;") {
				t.Error("no named export workloads")
			}
			continue
		}
		if !strings.Contains(dts, "export function "+name+"(") {
			t.Errorf("no named export function %s", name)
		}
	}

	var wls []string
	for name := range exports["workloads"].(map[string]any) {
		wls = append(wls, name)
	}
	sort.Strings(wls)
	if got := declared(block(t, dts, "export interface Workloads {")); !reflect.DeepEqual(got, wls) {
		t.Errorf("Workloads declares %v, the binding has %v", got, wls)
	}

	var methods []string
	wt := reflect.TypeOf(&Window{})
	for i := 0; i < wt.NumMethod(); i++ {
		methods = append(methods, jsName(wt.Method(i).Name))
	}
	sort.Strings(methods)
	if got := declared(block(t, dts, "export interface Window {")); !reflect.DeepEqual(got, methods) {
		t.Errorf("Window declares %v, the binding's window has %v", got, methods)
	}

	var fields []string
	et := reflect.TypeOf(Editor{})
	for i := 0; i < et.NumField(); i++ {
		if tag := et.Field(i).Tag.Get("js"); tag != "" {
			fields = append(fields, tag)
		}
	}
	sort.Strings(fields)
	if got := declared(block(t, dts, "export interface Editor {")); !reflect.DeepEqual(got, fields) {
		t.Errorf("Editor declares %v, the binding's editor has %v", got, fields)
	}
}
