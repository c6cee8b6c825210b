package main

import (
	"strings"
	"testing"
)

// wasmPageDOM is what Chromium rendered of js/kbcore/example/index.html
// (scripts/ci-wasm.sh), cut to the checked part.
const wasmPageDOM = `<h1 id="title">Budget</h1>
<ul id="outline"><li data-id="n1" data-rank="a0"><span class="text">Income 2026</span><ul><li data-id="n2" data-rank="a0"><span class="text">cash: $610,000</span></li></ul></li><li data-id="n3" data-rank="a1"><span class="text">see [[Forecast]] #done</span> <span class="ref" data-kind="link">Forecast</span> <span class="ref" data-kind="tag">done</span></li></ul>
<p id="status" data-ok="true" data-rejected="node-not-found" data-actions="send:c7" data-rank="a0V">applied 5 of 6 commands (rejected: node-not-found); window: send:c7</p>`

func TestCheckWasmPage(t *testing.T) {
	if msg, err := checkWasmPage(wasmPageDOM); err != nil {
		t.Fatalf("the rendered page fails: %v", err)
	} else {
		t.Log(msg)
	}
	for name, broken := range map[string]string{
		"still loading":     strings.Replace(wasmPageDOM, `data-ok="true"`, `data-ok=""`, 1),
		"failed":            strings.Replace(wasmPageDOM, `data-ok="true"`, `data-ok="false"`, 1),
		"no rejection":      strings.Replace(wasmPageDOM, `data-rejected="node-not-found"`, `data-rejected=""`, 1),
		"not indented":      strings.Replace(wasmPageDOM, `</span><ul><li data-id="n2"`, `</span></li><li data-id="n2"`, 1),
		"edit not applied":  strings.Replace(wasmPageDOM, `Income 2026`, `Income`, 1),
		"window edit lost":  strings.Replace(wasmPageDOM, `#done</span>`, `#todo</span>`, 1),
		"refs not rendered": strings.Replace(wasmPageDOM, ` <span class="ref" data-kind="tag">done</span>`, ``, 1),
		"rank not between":  strings.Replace(wasmPageDOM, `data-rank="a0V"`, `data-rank="a1V"`, 1),
	} {
		if broken == wasmPageDOM {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if _, err := checkWasmPage(broken); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}
