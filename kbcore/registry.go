package kbcore

import (
	"reflect"
	"slices"
)

// The command registry: one row per command type (spec/README.md section
// 2), in spec order. Every other list of command types in kbkit is derived
// from it (Types, the reducer's dispatch, the server's directory
// invalidation, the simulator's intents) or checked against it by one
// test (the JSON Schemas and the TypeScript types, spec/schema). Adding a
// type: docs/adding-a-command.md.

// Level says what a command type acts on.
type Level int

const (
	// NodeLevel types change the page's nodes.
	NodeLevel Level = iota
	// PageLevel types change the page record (title, aliases, merge).
	PageLevel
)

func (l Level) String() string {
	if l == PageLevel {
		return "page"
	}
	return "node"
}

// TypeInfo is a command type's row in the registry.
type TypeInfo struct {
	Type  string
	Level Level
	// Payload is the zero payload the handler decodes into (its JSON
	// field names are held to the payload's schema by a test).
	Payload any
	// Directory: an accepted command may change the workspace's
	// directory (live pages, titles, aliases): the server re-checks names
	// in its transaction and sends a directory invalidation (spec/PROTOCOL.md
	// 4.5).
	Directory bool
	// Elsewhere: the planner may derive commands on other pages
	// (spec/planner.md): a client learns their heads again.
	Elsewhere bool
	// Intent: what a user does in a window, drawn by the simulator and
	// offered to clients (spec/ADAPTER.md section 7). The others are
	// issued by the kit itself (create-page) or by undo (restore,
	// restore-page).
	Intent bool

	handler func(*tx, Command) *Rejection
}

// registry is the table; init fills byType, Types and the dispatch.
var registry = []TypeInfo{
	{Type: TypeCreateAfter, Payload: CreateAfter{}, Intent: true, handler: (*tx).createAfter},
	{Type: TypeEditText, Payload: EditText{}, Intent: true, handler: (*tx).editText},
	{Type: TypeMoveNode, Payload: MoveNode{}, Intent: true, handler: (*tx).moveNode},
	{Type: TypeIndent, Payload: NodeRef{}, Intent: true, handler: (*tx).indent},
	{Type: TypeOutdent, Payload: NodeRef{}, Intent: true, handler: (*tx).outdent},
	{Type: TypeDelete, Payload: NodeRef{}, Intent: true, handler: (*tx).deleteNode},
	{Type: TypeRestore, Payload: Restore{}, handler: (*tx).restore},
	{Type: TypeSetOutputs, Payload: SetOutputs{}, Intent: true, handler: (*tx).setOutputs},
	{Type: TypeSetCell, Payload: SetCell{}, Intent: true, handler: (*tx).setCell},
	{Type: TypeCreatePage, Level: PageLevel, Payload: CreatePage{}, Directory: true, handler: (*tx).createPage},
	{Type: TypeSetAliases, Level: PageLevel, Payload: SetAliases{}, Directory: true, Intent: true, handler: (*tx).setAliases},
	{Type: TypeRenamePage, Level: PageLevel, Payload: RenamePage{}, Directory: true, Elsewhere: true, Intent: true, handler: (*tx).renamePage},
	{Type: TypeMergePage, Level: PageLevel, Payload: MergePage{}, Directory: true, Elsewhere: true, Intent: true, handler: (*tx).mergePage},
	{Type: TypeRestorePage, Level: PageLevel, Payload: RestorePage{}, Directory: true, Elsewhere: true, handler: (*tx).restorePage},
}

var (
	byType   map[string]*TypeInfo
	handlers map[string]func(*tx, Command) *Rejection
)

// NewPayload is a pointer to a fresh zero payload of a command type, to
// decode into; false for an unknown type.
func NewPayload(typ string) (any, bool) {
	info, ok := byType[typ]
	if !ok {
		return nil, false
	}
	return reflect.New(reflect.TypeOf(info.Payload)).Interface(), true
}

// Types lists every command type in spec order.
var Types []string

func init() {
	byType = make(map[string]*TypeInfo, len(registry))
	handlers = make(map[string]func(*tx, Command) *Rejection, len(registry))
	for i := range registry {
		ti := &registry[i]
		byType[ti.Type] = ti
		handlers[ti.Type] = ti.handler
		Types = append(Types, ti.Type)
	}
}

// Registry returns a copy of the registry's rows, in spec order.
func Registry() []TypeInfo { return append([]TypeInfo(nil), registry...) }

// Lookup returns typ's row; false for a type kbkit does not know.
func Lookup(typ string) (TypeInfo, bool) {
	if ti, ok := byType[typ]; ok {
		return *ti, true
	}
	return TypeInfo{}, false
}

// ChangesDirectory reports whether an accepted command of type typ may
// change the workspace's directory (live pages, titles, aliases).
func ChangesDirectory(typ string) bool {
	ti, ok := byType[typ]
	return ok && ti.Directory
}

// DerivesElsewhere reports whether the planner may derive commands of a
// command of type typ on other pages.
func DerivesElsewhere(typ string) bool {
	ti, ok := byType[typ]
	return ok && ti.Elsewhere
}

// TypesWhere lists, in spec order, the types whose row satisfies keep.
func TypesWhere(keep func(TypeInfo) bool) []string {
	var out []string
	for _, ti := range registry {
		if keep(ti) {
			out = append(out, ti.Type)
		}
	}
	return out
}

// RegistryGaps holds a per-type table to the registry and says what is
// wrong, one message a gap: a type of the registry without a key of
// byType ("TYPE: no WHAT"), in spec order, then a key that is no type of
// the registry, sorted. what names the table's entry and where it is, as
// "fuzz generator (speckit/fuzz/gen_cmd.go payloadGens)".
func RegistryGaps[V any](byType map[string]V, what string) []string {
	var out, unknown []string
	for _, ti := range registry {
		if _, ok := byType[ti.Type]; !ok {
			out = append(out, ti.Type+": no "+what)
		}
	}
	for typ := range byType {
		if _, ok := Lookup(typ); !ok {
			unknown = append(unknown, typ+": a "+what+" for a type the registry (kbcore/registry.go) does not have")
		}
	}
	slices.Sort(unknown)
	return append(out, unknown...)
}
