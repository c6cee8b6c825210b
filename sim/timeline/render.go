package timeline

import (
	"encoding/json"
	"html/template"
	"io"
	"sort"
	"strings"
)

type pageData struct {
	T        *Timeline
	Data     template.JS
	Script   template.JS
	Findings []findingView
	Docs     []docsView
	Kinds    []string
	Events   int
}

type findingView struct {
	Finding
	IDs string // space-separated event ids
}

type docsView struct {
	PageDocs
	Differs bool
	Cols    []colView
}

type colView struct {
	Label string
	Note  string
	Lines []lineView
}

type lineView struct {
	Class string
	Text  string
}

// HTML writes the timeline as one self-contained page: inline CSS and a
// small inline script written for it, the events as JSON; nothing is
// fetched when it is viewed. Only the rows on screen are in the DOM, so
// a seed of thousands of events stays usable.
func HTML(w io.Writer, t *Timeline) error {
	type js struct {
		Lanes    []Lane    `json:"lanes"`
		Events   []Event   `json:"events"`
		Findings []Finding `json:"findings"`
		End      int64     `json:"end"`
	}
	end := t.EndAt
	for _, e := range t.Events {
		end = max(end, e.At, e.End)
	}
	data := js{Lanes: t.Lanes, Events: t.Events, Findings: t.Findings, End: end}
	if data.Lanes == nil {
		data.Lanes = []Lane{}
	}
	if data.Events == nil {
		data.Events = []Event{}
	}
	if data.Findings == nil {
		data.Findings = []Finding{}
	}
	b, err := json.Marshal(data) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	p := pageData{T: t, Data: template.JS(b), Script: template.JS(script), Events: len(t.Events),
		Kinds: []string{KindIssue, KindCommand, KindPost, KindEcho, KindRefetch, KindOpen, KindUndo, KindToast, KindFault, KindLog, KindNote}}
	for _, f := range t.Findings {
		ids := make([]string, len(f.Events))
		for i, id := range f.Events {
			ids[i] = itoa(id)
		}
		p.Findings = append(p.Findings, findingView{Finding: f, IDs: strings.Join(ids, " ")})
	}
	for _, d := range t.Docs {
		dv := docsView{PageDocs: d}
		col := colView{Label: d.Log.Label}
		for _, l := range d.Log.Lines {
			col.Lines = append(col.Lines, lineView{Text: l})
		}
		dv.Cols = append(dv.Cols, col)
		for _, wd := range d.Windows {
			c := colView{Label: wd.Label}
			if Differs(wd.Diff) {
				dv.Differs = true
				c.Note = "differs from the log (- only in the log, + only in the window)"
				for _, l := range wd.Diff {
					cls := map[byte]string{'-': "d-del", '+': "d-add"}[l.Op]
					c.Lines = append(c.Lines, lineView{Class: cls, Text: string(l.Op) + " " + l.Text})
				}
			} else {
				c.Note = "same as the log"
				for _, l := range wd.Lines {
					c.Lines = append(c.Lines, lineView{Text: l})
				}
			}
			dv.Cols = append(dv.Cols, c)
		}
		p.Docs = append(p.Docs, dv)
	}
	sort.SliceStable(p.Docs, func(i, j int) bool { return p.Docs[i].Differs && !p.Docs[j].Differs })
	return tmpl.Execute(w, p)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

var tmpl = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"first": func(s string) string {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[:i] + " …"
		}
		return s
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.T.Title}}</title>
<style>
body{font:13px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:16px;color:#222}
h1{font-size:19px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
.sub{color:#555;margin:2px 0} code{background:#f3f3f3;padding:1px 4px;border-radius:3px}
table.checks{border-collapse:collapse} .checks td{padding:1px 8px;border-bottom:1px solid #eee;vertical-align:top}
.pass{color:#137333} .fail{color:#c5221f;font-weight:600} .skip{color:#888}
.main{display:grid;grid-template-columns:minmax(260px,26%) minmax(0,1fr);gap:14px;align-items:start} .main>section{min-width:0}
#findings{max-height:84vh;overflow:auto;position:relative} #findings h2{position:sticky;top:0;background:#fff;margin-top:0;z-index:1}
#findings a.finding{display:block;white-space:pre-wrap;font:11px/1.35 ui-monospace,monospace;color:#222;text-decoration:none;word-break:break-all;
 border-left:4px solid #c5221f;background:#fdf0ef;margin:4px 0;padding:3px 6px;cursor:pointer;max-height:4.1em;overflow:hidden}
#findings a.finding.active{background:#ffe08a;border-left-color:#b06000;max-height:none}
#findings a.finding .n{float:right;color:#666;font-family:system-ui,sans-serif}
.controls{margin:6px 0;display:flex;gap:14px;align-items:center;flex-wrap:wrap}
.legend span{display:inline-block;padding:0 5px;margin-right:3px;border-radius:3px;font-size:11px}
#tl{position:relative;height:78vh;overflow:auto;border:1px solid #ccc;background:#fff}
#tl-head{position:sticky;top:0;z-index:3;height:40px;background:#f6f6f6;border-bottom:1px solid #ccc}
#tl-head .lane{position:absolute;top:0;height:40px;width:150px;padding:3px 4px;box-sizing:border-box;font-size:11px;overflow:hidden;border-right:1px solid #ddd}
#tl-head .lane b{display:block;font-size:12px}
.lane.window{background:#eef4fb} .lane.instance{background:#f4effa} .lane.database{background:#f9f0e8} .lane.log{background:#edf7ee}
#tl-body{position:relative;background-image:repeating-linear-gradient(to right,transparent 0 149px,#eee 149px 150px);background-position:76px 0}
#tl-links{position:absolute;left:0;top:0;pointer-events:none;z-index:2}
.ev{position:absolute;height:18px;line-height:18px;max-width:136px;padding:0 4px;font-size:11px;white-space:nowrap;overflow:hidden;
 text-overflow:ellipsis;border-radius:3px;cursor:pointer;box-sizing:border-box;z-index:1;border:1px solid transparent}
.span{position:absolute;width:5px;border-radius:2px;opacity:.75;cursor:pointer}
.t{position:absolute;left:2px;width:70px;font:10px/22px ui-monospace,monospace;color:#999;text-align:right}
.k-issue{background:#dbe9f7} .k-command{background:#1f77b4;color:#fff} .span.k-command{background:#1f77b4}
.k-post{background:#e4dbf3} .span.k-post{background:#9467bd} .k-echo{background:#dff1df} .k-refetch{background:#fde7c9}
.span.k-refetch{background:#ff7f0e} .k-open{background:#eee} .k-undo,.k-redo{background:#f7dff0} .k-toast{background:#f4f4d0}
.k-fault{background:#d62728;color:#fff} .k-log{background:#cfe8d0} .k-note{background:#f0f0f0;color:#555}
.ev.setup{max-width:none;background:#f4f4f4;color:#555;border:1px dashed #bbb}
.ev.rej{outline:1px dashed #c5221f} .span.open{background:repeating-linear-gradient(#1f77b4 0 4px,transparent 4px 8px)}
.ev.bad{border-color:#c5221f} .ev.hl{box-shadow:0 0 0 2px #ffb300;border-color:#b06000;z-index:2;font-weight:600}
.span.hl{box-shadow:0 0 0 2px #ffb300;opacity:1}
#tip{position:fixed;z-index:10;display:none;max-width:560px;background:#fff;border:1px solid #999;box-shadow:0 2px 8px rgba(0,0,0,.2);
 padding:6px 8px;font-size:12px;pointer-events:none}
#tip pre,#sel pre{margin:2px 0;white-space:pre-wrap;word-break:break-all;font:11px/1.3 ui-monospace,monospace;background:#f6f6f6;padding:3px}
#sel{font-size:12px;min-height:1em;margin:6px 0}
.docs{display:flex;gap:8px;overflow-x:auto;align-items:flex-start}
.docs .col{flex:0 0 auto;min-width:260px;max-width:460px;border:1px solid #ddd}
.docs .col h3{font-size:12px;margin:0;padding:3px 6px;background:#f6f6f6} .docs .col .note{font-size:11px;color:#666;padding:0 6px}
.docs pre{margin:0;padding:4px 6px;font:11px/1.35 ui-monospace,monospace;white-space:pre-wrap;max-height:480px;overflow:auto}
.d-add{background:#dcf5dc;display:block} .d-del{background:#fadcdc;display:block}
</style></head><body>
<h1>{{.T.Title}}</h1>
<p class="sub">{{.T.Summary}}</p>
<p class="sub">faults: {{.T.Faults}}</p>
{{if .T.Replay}}<p class="sub">replay: <code>{{.T.Replay}}</code></p>{{end}}
<table class="checks">{{range .T.Checks}}<tr><td>{{.Name}}</td>{{if not .Passed}}<td class="fail">FAILED</td>{{else if .Skipped}}<td class="skip">skipped</td>{{else}}<td class="pass">passed</td>{{end}}<td>{{first .Detail}}</td></tr>{{end}}</table>

<div class="main"><section id="findings"><h2>Findings ({{len .Findings}})</h2>
{{if not .Findings}}<p class="sub">none: every checker passed.</p>{{end}}
{{range .Findings}}<a class="finding" id="finding-{{.ID}}" href="#f{{.ID}}" data-finding="{{.ID}}" data-events="{{.IDs}}"><span class="n">{{len .Events}} events</span><b>{{.Checker}}</b>: {{.Text}}</a>
{{end}}</section>

<section id="tlsec"><h2>Timeline ({{.Events}} events)</h2>
<p class="sub">Time runs down, one row per event; a lane per window, server instance, database and page log. Bars are spans:
a command from its first POST to the server's decision (dashed: never decided), a POST to its answer, a refetch to its snapshot.
Click an event to light up what belongs to it (its command's posts, echoes at every window, log entries; an undo's reverted
commands); click a finding to light up its events.</p>
<div class="controls"><label>filter <input id="tl-filter" size="28" placeholder="command id, type, w2, fault…"></label>
<label><input type="checkbox" id="tl-only"> only the selected events</label>
<span class="legend">{{range .Kinds}}<span class="k-{{.}}">{{.}}</span>{{end}}</span></div>
<div id="sel"></div>
<div id="tl"><div id="tl-head"></div><div id="tl-body"><svg id="tl-links" xmlns="http://www.w3.org/2000/svg"></svg><div id="tl-rows"></div></div></div>
</section></div>

<section id="docs"><h2>Final documents</h2>
{{range .Docs}}<details{{if .Differs}} open{{end}} class="page-docs{{if .Differs}} differs{{end}}"><summary>{{.Label}}{{if .Differs}} — a window differs from the log{{else}} — every window renders the fold of the log{{end}}</summary>
<div class="docs">{{range .Cols}}<div class="col"><h3>{{.Label}}</h3>{{if .Note}}<div class="note">{{.Note}}</div>{{end}}<pre>{{range .Lines}}{{if .Class}}<span class="{{.Class}}">{{.Text}}</span>{{else}}{{.Text}}
{{end}}{{end}}</pre></div>{{end}}</div></details>
{{else}}<p class="sub">not read (the seed did not get to its checks).</p>{{end}}
</section>
<div id="tip"></div>
<script id="tl-data" type="application/json">{{.Data}}</script>
<script>{{.Script}}</script>
</body></html>
`))
