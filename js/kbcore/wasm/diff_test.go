package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/speckit/adapter"
	"github.com/subspace/kbkit/speckit/cases"
)

var (
	diffN    = flag.Int("diff.n", 250, "TestDifferential: generated inputs of each kind (apply, tokenize text, tokenize a formula, window, plan)")
	diffSeed = flag.Uint64("diff.seed", 1, "TestDifferential: the generator's seed")
	diffImpl = flag.String("diff.adapter", "../adapter.mjs", "TestDifferential: the package's adapter (an installed node_modules/@kbkit/core/adapter.mjs, say)")
)

// TestDifferential sends the same generated inputs to the package's
// adapter (node ../adapter.mjs, or -diff.adapter: @kbkit/core and its
// kbcore.wasm) and to the native reference (cases.Reference, kbcore
// compiled for this machine) and wants the same answer to every one:
// documents, inverses, indexes, rejections with their messages, tokens,
// window states and plans. -diff.n inputs of each of five kinds (apply,
// tokenize text, tokenize a formula, a window script, a plan).
// It needs the adapter's kbcore.wasm (make wasm) and node; without them it skips,
// unless KBKIT_REQUIRE_WASM=1 (scripts/ci-wasm.sh) makes that a failure.
func TestDifferential(t *testing.T) {
	wasmFile := filepath.Join(filepath.Dir(*diffImpl), "kbcore.wasm")
	if _, err := os.Stat(wasmFile); err != nil {
		need(t, wasmFile+" is not built (make wasm)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		need(t, "node is not installed")
	}
	ctx := context.Background()
	wasm, err := adapter.Start(ctx, []string{"node", *diffImpl}, adapter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer wasm.Close()
	var ref cases.Reference
	g := gen{rand.New(rand.NewPCG(*diffSeed, 0x6b62))}
	diffs, total := 0, 0
	applied, rejected, steps, effects := 0, 0, 0, 0
	check := func(kind string, input any, native, got any, nerr, gerr error) {
		total++
		if msg := differ(native, got, nerr, gerr); msg != "" {
			diffs++
			if diffs <= 10 {
				in, _ := json.Marshal(input)
				t.Errorf("%s #%d differs: %s\ninput: %s", kind, total, msg, in)
			}
		}
	}
	for i := 0; i < *diffN; i++ {
		d := g.doc("p1", g.pick(titles[:5]), 12)
		doc, _ := d.MarshalJSON()
		c := g.command(d, fmt.Sprintf("c%d", i))
		cmd, _ := json.Marshal(c)
		n, nerr := ref.Apply(ctx, doc, cmd)
		w, werr := wasm.Apply(ctx, doc, cmd)
		check("apply", map[string]any{"doc": json.RawMessage(doc), "cmd": c}, n, w, nerr, werr)
		if n.Rejected != nil {
			rejected++
		} else {
			applied++
		}

		text, formula := g.text(textBits, 12), g.text(formulaBits, 10)
		for _, req := range []cases.TokenizeRequest{{Text: &text}, {Formula: &formula}} {
			n, nerr := ref.Tokenize(ctx, req)
			w, werr := wasm.Tokenize(ctx, req)
			check("tokenize", req, n, w, nerr, werr)
		}

		seq := int64(g.r.IntN(5))
		given, _ := json.Marshal(map[string]any{"doc": d, "seq": seq})
		wreq := cases.WindowRequest{Given: given, Steps: g.windowSteps(d, seq)}
		ns, nerr := ref.Window(ctx, wreq)
		ws, werr := wasm.Window(ctx, wreq)
		check("window", wreq, ns, ws, nerr, werr)
		steps += len(wreq.Steps)

		preq := cases.PlanRequest{Workspace: cases.DefaultWorkspace, Page: "p1"}
		pages := []kbcore.Doc{d}
		for k := g.r.IntN(3); k > 0; k-- {
			pages = append(pages, g.doc(fmt.Sprintf("p%d", k+1), g.pick(titles[:5]), 4))
		}
		for _, p := range pages {
			b, _ := p.MarshalJSON()
			preq.Pages = append(preq.Pages, b)
		}
		preq.Cmd, _ = json.Marshal(g.command(d, fmt.Sprintf("c%d", i)))
		np, nerr := ref.Plan(ctx, preq)
		wp, werr := wasm.Plan(ctx, preq)
		check("plan", preq, np, wp, nerr, werr)
		effects += len(np.Effects)
	}
	if wasm.Restarts() != 0 {
		t.Errorf("the adapter was restarted %d times", wasm.Restarts())
	}
	t.Logf("%d generated inputs (seed %d): %d differences between kbcore.wasm and native kbcore", total, *diffSeed, diffs)
	t.Logf("commands %d applied, %d rejected; %d window steps; %d plan effects", applied, rejected, steps, effects)
	if applied == 0 || rejected == 0 || effects == 0 {
		t.Errorf("the generator is lopsided: it must make commands that apply, commands rejected and plans with effects")
	}
}

func need(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("KBKIT_REQUIRE_WASM") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// differ compares two answers as JSON values (object key order and
// number spelling aside); "" when they are the same. An error on one
// side only is a difference; the errors' texts are not compared (the
// adapter's crash reply carries the module's message, the reference's
// error is Go's).
func differ(native, got any, nerr, gerr error) string {
	if (nerr != nil) != (gerr != nil) {
		return fmt.Sprintf("native error %v, wasm error %v", nerr, gerr)
	}
	if nerr != nil {
		return ""
	}
	a, b := normal(native), normal(got)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return fmt.Sprintf("\nnative: %s\nwasm:   %s", ja, jb)
	}
	return ""
}

// normal is v as a generic JSON value, empty lists and absent ones alike
// (the client's reply structs omit empty fields).
func normal(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return err.Error()
	}
	return out
}
