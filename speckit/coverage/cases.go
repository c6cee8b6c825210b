package coverage

import (
	"fmt"
	"strings"

	"github.com/subspace/kbkit/speckit/cases"
)

// caseCovers are the requirements a spec case tests by its id: a list
// entry ending in "/" or "-" is an id prefix, "*" is every case. The
// rest is derived from the case's shape (derivedCovers).
var caseCovers = map[string][]string{
	"model.pass-every-case":                {"*"},
	"adapter.flush-replies":                {"*"},
	"adapter.stdout-replies-only":          {"*"},
	"adapter.canonical-text":               {"canonical/"},
	"model.create-id-is-node-id":           {"create-after/bad-node-id-invalid-payload", "create-after/empty-node-id-invalid-payload"},
	"model.distinct-sibling-ranks":         {"create-after/concurrent-hint-taken-gap-still-lands", "create-after/rank-hint-equal-to-", "restore/rank-taken-"},
	"model.restore-collision-exact":        {"restore/rank-taken-"},
	"model.move-node-required-keys":        {"move-node/missing-after-invalid-payload", "move-node/missing-parent-and-after-invalid-payload"},
	"model.rank-fraction-no-trailing-zero": {"create-after/invalid-rank-hint-is-ignored", "restore/invalid-rank-record-invalid-payload"},
	"model.cycles-per-table":               {"set-cell/cycle-still-commits"},
	"planner.check.page-not-found":         {"planner/command-on-missing-page"},
	"planner.check.title-taken":            {"planner/create-page-title-taken-", "planner/rename-title-taken"},
	"planner.check.alias-taken":            {"planner/rename-aliases-alias-taken", "planner/set-aliases-alias-taken-"},
	"planner.check.merge-target-not-found": {"planner/merge-into-missing-page"},
	"planner.check.restore-title-taken":    {"planner/restore-page-title-taken-"},
	"planner.checks-before-reducer": {"planner/malformed-payload-invalid-before-title-taken", "planner/create-page-title-taken-before-page-exists",
		"planner/restore-page-title-taken-before-wrong-page-id"},
	"planner.shared-name-smallest-id":   {"planner/shared-alias-"},
	"tokenizer.title-nonempty-one-line": {"tokenizer/link-empty", "tokenizer/embed-empty", "tokenizer/tag-bracketed-empty", "tokenizer/link-newline-inside", "tokenizer/embed-newline"},
	"tokenizer.spans-nest":              {"tokenizer/link-nested", "tokenizer/embed-nested", "tokenizer/tag-bracketed-nested"},
	"tokenizer.rewrite-inner-first":     {"planner/rename-nested-link-rewrites-inner-only"},
	"window.echo-in-order":              {"window/gap-triggers-refetch", "window/gap-then-snapshot-resends-pending-with-same-ids"},
}

// derivedCovers are the requirements a case tests by its shape: a
// reducer case tests its command's row of the command table (2.2) and,
// rejected, its code's rows (2.1, 2.3); a window case tests the rows of
// the events its steps deliver. Ids no requirement has are dropped.
func derivedCovers(c cases.Case) []string {
	var out []string
	switch c.Suite() {
	case cases.SuiteCommands:
		if cmd, ok := c.When["cmd"].(map[string]any); ok {
			if t, ok := cmd["type"].(string); ok {
				out = append(out, "model.command."+t)
			}
		}
		if code, ok := c.Then["rejected"]; ok {
			s := fmt.Sprint(code)
			out = append(out, "model.code."+s, "model.check."+s)
			switch s {
			case "unknown-type", "invalid-payload":
				out = append(out, "adapter.cmd-verbatim")
			case "cycle", "parent-not-found":
				out = append(out, "model.tree")
			}
		}
	case cases.SuiteWindow:
		out = append(out, "window.behave")
		for _, st := range c.Steps {
			step, _ := st.(map[string]any)
			ev, _ := step["event"].(map[string]any)
			for k := range ev {
				out = append(out, "window.event."+k)
			}
		}
	}
	return out
}

// caseMatches reports whether the case id is named by pattern.
func caseMatches(pattern, id string) bool {
	switch {
	case pattern == "*":
		return true
	case strings.HasSuffix(pattern, "/") || strings.HasSuffix(pattern, "-"):
		return strings.HasPrefix(id, pattern)
	}
	return id == pattern
}
