package schema

import (
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/spec"
)

// TestRegistryLists holds every list of command types kbkit's spec writes
// by hand to the registry (kbcore/registry.go), so that a type added there
// but not here, or here but not there, fails one test: the schemas' type
// enum and their one branch per type, each payload schema's fields and the
// registry's payload struct, the adapter's intents, and the TypeScript
// types (docs/adding-a-command.md).
func TestRegistryLists(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	defs := func(name string) map[string]any {
		m, _ := files[name].(map[string]any)
		d, _ := m["$defs"].(map[string]any)
		return d
	}
	common := defs(CommonSchema)

	// The type enum, in spec order.
	enum := strings_(t, common["commandType"].(map[string]any)["enum"])
	if !slices.Equal(enum, kbcore.Types) {
		t.Errorf("common.schema.json commandType = %v, the registry %v", enum, kbcore.Types)
	}

	// One branch per type, in spec order, to its payload schema.
	var branched []string
	for i, b := range common["payloadByType"].(map[string]any)["allOf"].([]any) {
		bm := b.(map[string]any)
		typ, _ := dig(bm, "if", "properties", "type", "const").(string)
		ref, _ := dig(bm, "then", "properties", "payload", "$ref").(string)
		if ref != PayloadSchema(typ) {
			t.Errorf("payloadByType branch %d: type %q refers to %q, want %q", i, typ, ref, PayloadSchema(typ))
		}
		branched = append(branched, typ)
	}
	if !slices.Equal(branched, kbcore.Types) {
		t.Errorf("common.schema.json payloadByType branches %v, the registry %v", branched, kbcore.Types)
	}

	// Each payload schema's fields are the registry payload's JSON fields.
	schemaFields := map[string][]string{}
	for _, ti := range kbcore.Registry() {
		m, _ := files[PayloadSchema(ti.Type)].(map[string]any)
		props, _ := m["properties"].(map[string]any)
		var got []string
		for k := range props {
			got = append(got, k)
		}
		sort.Strings(got)
		schemaFields[ti.Type] = got
		if want := jsonFields(ti.Payload); !slices.Equal(got, want) {
			t.Errorf("%s: payload schema fields %v, the registry payload %T's %v", ti.Type, got, ti.Payload, want)
		}
	}

	// The adapter's intents: the registry's, then undo and redo.
	intents := strings_(t, defs("adapter/defs.schema.json")["intent"].(map[string]any)["enum"])
	want := append(kbcore.TypesWhere(func(ti kbcore.TypeInfo) bool { return ti.Intent }), "undo", "redo")
	if !slices.Equal(intents, want) {
		t.Errorf("adapter/defs.schema.json intent = %v, the registry's intents %v", intents, want)
	}

	// The TypeScript payload types: one member per type, in spec order,
	// with the schema's fields.
	src, err := fs.ReadFile(spec.FS, "types/kbkit.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	members := tsPayloads(t, string(src))
	var names []string
	for _, m := range members {
		names = append(names, m.name)
		if want := schemaFields[m.name]; !slices.Equal(m.fields, want) {
			t.Errorf("kbkit.d.ts Payloads[%q] has fields %v, its schema %v", m.name, m.fields, want)
		}
	}
	if !slices.Equal(names, kbcore.Types) {
		t.Errorf("kbkit.d.ts Payloads = %v, the registry %v", names, kbcore.Types)
	}

	// The TypeScript ClientIntent union (written by hand): the registry's
	// intents and undo and redo, in any order.
	_, union, ok := strings.Cut(string(src), "export type ClientIntent =")
	union, _, _ = strings.Cut(union, ";")
	if !ok {
		t.Fatal("kbkit.d.ts has no `export type ClientIntent =`")
	}
	var got []string
	for _, m := range regexp.MustCompile(`"([a-z-]+)"`).FindAllStringSubmatch(union, -1) {
		got = append(got, m[1])
	}
	sort.Strings(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("kbkit.d.ts ClientIntent = %v, the registry's intents and undo, redo: %v", got, want)
	}
}

func strings_(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// jsonFields lists the JSON names of a payload struct's fields, sorted.
func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

type tsMember struct {
	name   string
	fields []string // sorted
}

var (
	tsMemberRe = regexp.MustCompile(`^\s*"?([a-z-]+)"?: \{(.*)\};\s*$`)
	tsFieldRe  = regexp.MustCompile(`([a-z_]+)\??:`)
)

// tsPayloads reads the members of `export interface Payloads { ... }`.
func tsPayloads(t *testing.T, src string) []tsMember {
	t.Helper()
	_, body, ok := strings.Cut(src, "export interface Payloads {\n")
	if !ok {
		t.Fatal("kbkit.d.ts has no `export interface Payloads {`")
	}
	body, _, _ = strings.Cut(body, "\n}")
	var out []tsMember
	for _, line := range strings.Split(body, "\n") {
		m := tsMemberRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("kbkit.d.ts Payloads: cannot read %q", line)
			continue
		}
		var fields []string
		for _, f := range tsFieldRe.FindAllStringSubmatch(m[2], -1) {
			fields = append(fields, f[1])
		}
		sort.Strings(fields)
		out = append(out, tsMember{m[1], fields})
	}
	return out
}

// TestGeneratedUpToDate fails while a registry-derived part of the spec
// differs from what the registry makes of it: run go generate ./spec/schema.
func TestGeneratedUpToDate(t *testing.T) {
	files, err := Generate(spec.FS)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		t.Errorf("spec/%s is not what the registry makes of it: run go generate ./spec/schema", name)
	}
}
