package kbkit

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/grafana/sobek"

	"github.com/subspace/kbkit/kbcore"
	"github.com/subspace/kbkit/loadgen/workload"
)

// ---- workloads ----

// workloads are kbkit loadgen's workloads, one operation per call on an
// editor (one of its windows, drawn at random) or a window:
// kbkit.workloads.hotPage(kbkit.editor(data)).
func (mi *ModuleInstance) workloads() map[string]any {
	out := map[string]any{}
	for _, name := range workload.Names() {
		spec, _ := workload.Named(name)
		parts := strings.Split(name, "-")
		for i := 1; i < len(parts); i++ {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
		js := strings.Join(parts, "")
		out[js] = func(target sobek.Value, opts sobek.Value) (map[string]any, error) {
			return mi.operate(js, spec, target, opts)
		}
	}
	return out
}

func (mi *ModuleInstance) operate(fn string, spec workload.Spec, target, opts sobek.Value) (map[string]any, error) {
	if opts != nil && !sobek.IsUndefined(opts) && !sobek.IsNull(opts) {
		var o struct {
			Mix   string `json:"mix"`
			Burst int    `json:"burst"`
		}
		if err := decode("workloads."+fn, opts, &o); err != nil {
			return nil, err
		}
		spec, _ = workload.Named(spec.Name) // a fresh mix to override
		if o.Mix != "" {
			if err := spec.SetMix(o.Mix); err != nil {
				return nil, fmt.Errorf("kbkit.workloads.%s: %w", fn, err)
			}
		}
		if o.Burst > 0 {
			spec.Burst = o.Burst
		}
	}
	var w *Window
	var rng *rand.Rand
	tag := "k6"
	switch t := exportOf(target).(type) {
	case *Editor:
		if len(t.Windows) == 0 {
			return nil, fmt.Errorf("kbkit.workloads.%s: the editor has no window", fn)
		}
		w, rng, tag = t.Windows[t.rng.IntN(len(t.Windows))], t.rng, t.tag
	case *Window:
		w, rng = t, t.rng
	default:
		return nil, fmt.Errorf("kbkit.workloads.%s: want an editor (kbkit.editor) or a window (kbkit.openWindow)", fn)
	}
	titles := mi.root.sess.Titles()
	title := ""
	if spec.Mix[workload.Rename] > 0 {
		title = fmt.Sprintf("LG %s v%d r%d", tag, mi.vu.State().VUIDGlobal, mi.root.renames.Add(1))
	}
	return w.local(spec.Name, func(id string, doc kbcore.Doc) kbcore.Command {
		return spec.Next(rng, workload.Context{Doc: doc, ID: id, Titles: titles, Title: title}, &w.cur)
	})
}

func exportOf(v sobek.Value) any {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil
	}
	return v.Export()
}
