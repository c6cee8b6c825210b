package main

import (
	"fmt"
	"regexp"
	"strings"
)

// checkWasmPage checks the DOM of js/kbcore/example/index.html after its
// script ran: the outline kbcore.wasm made of the page's commands (n2
// indented under n1, n3 created after n1, n1's text edited, the delete of
// a missing node rejected), the window's optimistic edit of n3 rendered
// with its tokens, and the status line.
func checkWasmPage(dom string) (string, error) {
	status := regexp.MustCompile(`<p id="status" data-ok="([^"]*)"([^>]*)>([^<]*)</p>`).FindStringSubmatch(dom)
	if status == nil {
		return "", fmt.Errorf("no status line")
	}
	if status[1] != "true" {
		return "", fmt.Errorf("the page says: %s", status[3])
	}
	for _, want := range []string{`data-rejected="node-not-found"`, `data-actions="send:c7"`} {
		if !strings.Contains(status[2], want) {
			return "", fmt.Errorf("status %s: no %s", status[2], want)
		}
	}
	rank := regexp.MustCompile(`data-rank="([^"]*)"`).FindStringSubmatch(status[2])
	if rank == nil || !(rank[1] > "a0" && rank[1] < "a1") {
		return "", fmt.Errorf("status %s: the rank minted between a0 and a1 is not between them", status[2])
	}
	if !strings.Contains(dom, `<h1 id="title">Budget</h1>`) {
		return "", fmt.Errorf("the page title is not rendered")
	}
	outline := regexp.MustCompile(`(?s)<ul id="outline">(.*)</ul>\s*<p id="status"`).FindStringSubmatch(dom)
	if outline == nil {
		return "", fmt.Errorf("no outline")
	}
	// The whole tree, in order: n1 holding n2, then n3 with its refs.
	want := regexp.MustCompile(`^<li data-id="n1" data-rank="[^"]+"><span class="text">Income 2026</span>` +
		`<ul><li data-id="n2" data-rank="[^"]+"><span class="text">cash: \$610,000</span></li></ul></li>` +
		`<li data-id="n3" data-rank="[^"]+"><span class="text">see \[\[Forecast\]\] #done</span> ` +
		`<span class="ref" data-kind="link">Forecast</span> <span class="ref" data-kind="tag">done</span></li>$`)
	if !want.MatchString(outline[1]) {
		return "", fmt.Errorf("the outline is not the expected tree: %s", outline[1])
	}
	return fmt.Sprintf("wasm page: 3 nodes in the expected tree, refs rendered, %s", status[3]), nil
}
