package adapter

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The @kbkit/core adapter's replies (kbcore as WebAssembly, js/kbcore)
// validate too, for every spec case, once its kbcore.wasm is built
// (make wasm; scripts/ci-wasm.sh sets KBKIT_REQUIRE_WASM).
func TestWasmAdapterRepliesMatchSchemas(t *testing.T) {
	script, err := filepath.Abs("../../js/kbcore/adapter.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "kbcore.wasm")); err != nil {
		if os.Getenv("KBKIT_REQUIRE_WASM") != "" {
			t.Fatalf("%v (build it: make wasm)", err)
		}
		t.Skip("js/kbcore/kbcore.wasm is not built")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed but kbcore.wasm is built")
	}
	dir := runTee(t, []string{"node", script})
	reps := validateLog(t, filepath.Join(dir, "replies.ndjson"))
	for _, typ := range []string{"init_ok", "apply_ok", "tokenize_ok", "window_ok", "plan_ok"} {
		if reps[typ] == 0 {
			t.Errorf("no %s reply was checked (%v)", typ, reps)
		}
	}
}
