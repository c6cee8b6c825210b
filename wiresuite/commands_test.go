package wiresuite

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

// TestOneCommandCheckPerType holds commandChecks to the command registry
// (kbcore/registry.go): one check protocol/command-<type> per type.
func TestOneCommandCheckPerType(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range Checks() {
		ids[c.ID] = true
	}
	for _, typ := range kbcore.Types {
		if !ids["protocol/command-"+typ] {
			t.Errorf("%s: no protocol check protocol/command-%s (wiresuite/checks_commands.go commandChecks)", typ, typ)
		}
	}
}

// TestAlterationPerType holds alterations to the command registry, as
// TestBrokenCommandPerType needs one per type.
func TestAlterationPerType(t *testing.T) {
	for _, gap := range kbcore.RegistryGaps(alterations, "broken-server alteration (wiresuite/commands_test.go alterations)") {
		t.Error(gap)
	}
}

// alterations change a payload of each type into another valid-looking
// one: what a server that garbles that type on its way to the log would
// store.
var alterations = map[string]func(pl map[string]any){
	"create-after": func(pl map[string]any) { pl["text"] = pl["text"].(string) + "!" },
	"edit-text":    func(pl map[string]any) { pl["text"] = pl["text"].(string) + "!" },
	"create-page":  func(pl map[string]any) { pl["title"] = pl["title"].(string) + "!" },
	"rename-page":  func(pl map[string]any) { pl["title"] = pl["title"].(string) + "!" },
	"move-node": func(pl map[string]any) {
		pl["after"] = nil
		delete(pl, "rank")
	},
	"indent":       func(pl map[string]any) { pl["node"] = "n1" },
	"outdent":      func(pl map[string]any) { pl["node"] = "n1" },
	"delete":       func(pl map[string]any) { pl["node"] = "n1" },
	"restore":      dropLastNode,
	"restore-page": dropLastNode,
	"set-outputs":  func(pl map[string]any) { pl["outputs"] = []any{} },
	"set-cell":     func(pl map[string]any) { pl["value"] = pl["value"].(string) + "0" },
	"set-aliases":  func(pl map[string]any) { pl["aliases"] = append(pl["aliases"].([]any), "extra "+newID()) },
	"merge-page":   func(pl map[string]any) { pl["into"] = newID() },
}

func dropLastNode(pl map[string]any) {
	if ns, _ := pl["nodes"].([]any); len(ns) > 1 {
		pl["nodes"] = ns[:len(ns)-1]
	}
}

// A server that garbles the payload of one command type before logging
// it: protocol/command-<type> fails, for each type of the registry.
func TestBrokenCommandPerType(t *testing.T) {
	var garble atomic.Value
	garble.Store("")
	env := start(t, func(h http.Handler) http.Handler {
		return editCommand(h, func(env map[string]any) {
			typ, _ := env["type"].(string)
			pl, _ := env["payload"].(map[string]any)
			if alter := alterations[typ]; typ == garble.Load().(string) && pl != nil && alter != nil {
				alter(pl)
			}
		})
	})
	for _, typ := range kbcore.Types {
		garble.Store(typ)
		id := "protocol/command-" + typ
		r := run(t, env, "^"+id+"$")[id]
		if r.Status != Fail {
			t.Errorf("%s passes on a server garbling %s: %s", id, typ, describe(r))
			continue
		}
		t.Logf("%s failed as it should: %s", id, r.Message)
	}
	garble.Store("")
	expectFailures(t, run(t, env, `^protocol/command-(indent|set-cell)$`), nil,
		[]string{"protocol/command-indent", "protocol/command-set-cell"})
}

// editPage rewrites the doc of every kb.page answer (also in batches).
func editPage(next http.Handler, edit func(doc map[string]any)) http.Handler {
	return rewrite(next, func(r *http.Request, status int, body []byte) (int, []byte) {
		if !strings.Contains(r.URL.Path, "kb.page") || status != http.StatusOK {
			return status, body
		}
		one := func(v any) {
			res, _ := v.(map[string]any)["result"].(map[string]any)
			data, _ := res["data"].(map[string]any)
			if doc, ok := data["doc"].(map[string]any); ok {
				edit(doc)
			}
		}
		var v any
		if json.Unmarshal(body, &v) != nil {
			return status, body
		}
		if arr, ok := v.([]any); ok {
			for _, x := range arr {
				one(x)
			}
		} else {
			one(v)
		}
		b, _ := json.Marshal(v)
		return status, b
	})
}

// A server that loses table cells and code outputs: every check whose
// pages hold them fails, the others pass.
func TestBrokenLosesCellsAndOutputs(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return editPage(h, func(doc map[string]any) {
			nodes, _ := doc["nodes"].([]any)
			for _, n := range nodes {
				n := n.(map[string]any)
				if _, ok := n["cells"]; ok {
					n["cells"] = map[string]any{}
				}
				if _, ok := n["outputs"]; ok {
					n["outputs"] = []any{}
				}
			}
		})
	})
	results := run(t, env, `^protocol/command-`)
	expectFailures(t, results,
		[]string{"protocol/command-set-cell", "protocol/command-set-outputs", "protocol/command-delete", "protocol/command-restore",
			"protocol/command-move-node", "protocol/command-merge-page", "protocol/command-restore-page"},
		[]string{"protocol/command-create-page", "protocol/command-create-after", "protocol/command-edit-text",
			"protocol/command-indent", "protocol/command-outdent", "protocol/command-set-aliases", "protocol/command-rename-page"})
}

// A server that loses aliases.
func TestBrokenLosesAliases(t *testing.T) {
	env := start(t, func(h http.Handler) http.Handler {
		return editPage(h, func(doc map[string]any) {
			if p, ok := doc["page"].(map[string]any); ok {
				p["aliases"] = []any{}
			}
		})
	})
	results := run(t, env, `^protocol/command-(set-aliases|rename-page|merge-page|restore-page|create-page|set-cell)$`)
	expectFailures(t, results,
		[]string{"protocol/command-set-aliases", "protocol/command-rename-page", "protocol/command-merge-page", "protocol/command-restore-page"},
		[]string{"protocol/command-create-page", "protocol/command-set-cell"})
}
