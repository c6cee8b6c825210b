package matrix

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/subspace/kbkit/speckit/report"
)

// Text writes the matrix as a table (one line per implementation, a
// column per suite: passed/total, then what did not pass, in words) and
// the changes.
func (m *Matrix) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kbkit %s spec_version %d\n", m.Kit, m.SpecVersion)
	width := map[string]int{}
	for _, s := range m.Suites {
		width[s] = max(len(s), 7)
		for _, r := range m.Rows {
			width[s] = max(width[s], len(cellText(r, s)))
		}
	}
	fmt.Fprintf(&b, "%-14s", "implementation")
	for _, s := range m.Suites {
		fmt.Fprintf(&b, "  %-*s", width[s], s)
	}
	fmt.Fprintf(&b, "  %s\n", "tier")
	for _, r := range m.Rows {
		fmt.Fprintf(&b, "%-14s", r.Name)
		for _, s := range m.Suites {
			fmt.Fprintf(&b, "  %-*s", width[s], cellText(r, s))
		}
		fmt.Fprintf(&b, "  %s\n", r.Tier)
		if r.Err != "" {
			fmt.Fprintf(&b, "  could not run: %s\n", r.Err)
		}
		if note := r.runBy(m); note != "" {
			fmt.Fprintf(&b, "  %s\n", note)
		}
	}
	b.WriteString("(cells: passed/cases, then the cases that did not pass)\n")
	if m.Against != "" {
		fmt.Fprintf(&b, "\nchanges since %s: %d\n", m.Against, len(m.Changes))
		for _, c := range m.Changes {
			fmt.Fprintf(&b, "  %-22s %-14s %s\n", c.Kind, c.Impl, changeText(c))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// runBy says when a row's records come from another kbkit or
// spec_version than the matrix's ("" when they do not).
func (r Row) runBy(m *Matrix) string {
	switch {
	case r.Err != "" || (r.Kit == m.Kit && r.SpecVersion == m.SpecVersion):
		return ""
	case r.Kit == "":
		return "results of a kbkit that did not name its version"
	}
	return fmt.Sprintf("results of kbkit %s spec_version %d", r.Kit, r.SpecVersion)
}

// cellText is a cell of the text table: "276/499, 3 failed, 220 skipped"
// (words, not letters: "276s" read as seconds).
func cellText(r Row, suite string) string {
	c, ok := r.Suites[suite]
	if !ok {
		return "-"
	}
	s := fmt.Sprintf("%d/%d", c.Pass, c.Total)
	for _, p := range []struct {
		n int
		k string
	}{{c.Fail, "failed"}, {c.Error, "errored"}, {c.UnexpectedPass, "passed unexpectedly"}, {c.ExpectedFail, "expected to fail"}, {c.Skip, "skipped"}} {
		if p.n > 0 {
			s += fmt.Sprintf(", %d %s", p.n, p.k)
		}
	}
	return s
}

func changeText(c Change) string {
	s := c.ID
	if c.Was != "" || c.Now != "" {
		if s != "" {
			s += ": "
		}
		switch {
		case c.Was == "":
			s += c.Now
		case c.Now == "":
			s += "was " + c.Was
		default:
			s += c.Was + " -> " + c.Now
		}
	}
	return s
}

type htmlCell struct {
	Suite  string
	Counts Counts
	Has    bool
	Class  string
}

type htmlRow struct {
	Row
	Anchor string
	Cells  []htmlCell
	Color  string
	RunBy  string      // the kbkit and spec_version of its records, when not the matrix's
	Groups []htmlGroup // the failures by suite
}

type htmlGroup struct {
	Suite, Anchor string
	Failures      []htmlFailure
}

type htmlFailure struct {
	report.Record
	Input  string
	Reason string
}

type htmlPage struct {
	*Matrix
	Rows  []htmlRow
	Tiers []Tier
	CSS   template.CSS
	JS    template.JS
}

// HTML writes the matrix as one self-contained page (inline CSS and a
// small script; nothing fetched).
func (m *Matrix) HTML(w io.Writer) error {
	p := htmlPage{Matrix: m, Tiers: Tiers, CSS: template.CSS(pageCSS), JS: template.JS(pageJS)}
	for i, r := range m.Rows {
		hr := htmlRow{Row: r, Anchor: fmt.Sprintf("impl-%d", i), Color: TierByName(r.Tier).Color, RunBy: r.runBy(m)}
		for _, s := range m.Suites {
			c, ok := r.Suites[s]
			class := "none"
			switch {
			case !ok:
			case c.Bad() > 0:
				class = "bad"
			case c.Pass == c.Total:
				class = "good"
			default:
				class = "partial"
			}
			hr.Cells = append(hr.Cells, htmlCell{Suite: s, Counts: c, Has: ok, Class: class})
		}
		for _, suite := range m.Suites {
			g := htmlGroup{Suite: suite, Anchor: hr.Anchor + "-" + suite}
			for _, f := range r.Failures {
				if f.Suite != suite {
					continue
				}
				hf := htmlFailure{Record: f}
				if f.Input != nil {
					b, _ := json.MarshalIndent(f.Input, "", "  ")
					hf.Input = string(b)
				}
				if f.Expected != nil {
					hf.Reason = f.Expected.Reason
				}
				g.Failures = append(g.Failures, hf)
			}
			hr.Groups = append(hr.Groups, g)
		}
		p.Rows = append(p.Rows, hr)
	}
	return pageTmpl.Execute(w, p)
}

const pageCSS = `body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555} table{border-collapse:collapse;margin:6px 0} td,th{padding:4px 10px;border:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f6f6f6} td.good{background:#e3f4e3} td.partial{background:#fdf6d8} td.bad{background:#fbe1df} td.none{color:#999}
td a{color:inherit;text-decoration:none;display:block} td a:hover{text-decoration:underline}
.n{font-variant-numeric:tabular-nums;font-weight:600} .k{color:#666;font-size:12px}
.tier{display:inline-block;padding:1px 8px;border-radius:9px;color:#fff;font-weight:600;font-size:12px}
.tier.brightgreen{background:#2e9e44} .tier.green{background:#5aa02c} .tier.yellow{background:#b49b00} .tier.red{background:#c5221f} .tier.lightgrey{background:#999}
details{border:1px solid #ddd;border-radius:4px;margin:8px 0;padding:4px 10px} summary{cursor:pointer;font-weight:600}
h4.suite{margin:10px 0 2px;font-size:13px} .case{border-top:1px solid #eee;padding:6px 0} .case h3{font-size:13px;margin:0;font-family:ui-monospace,monospace}
.v-fail h3,.v-error h3,.v-unexpected-pass h3{color:#c5221f} .v-expected-fail h3{color:#8a6d00}
pre{background:#f7f7f7;padding:6px 8px;overflow-x:auto;font:12px/1.35 ui-monospace,monospace;margin:4px 0;max-height:24em}
pre.diff .del{color:#a31515} pre.diff .ins{color:#137333}
.changes td:first-child{white-space:nowrap} .c-new-failure{color:#c5221f;font-weight:600}
#filter{margin:6px 0}`

// pageJS opens the drill-down a cell links to and colours diff lines.
const pageJS = `(function(){
function open(){var h=location.hash.slice(1);if(!h)return;var e=document.getElementById(h);if(!e)return;
var d=e.closest("details");if(d)d.open=true;e.scrollIntoView();}
window.addEventListener("hashchange",open);open();
document.querySelectorAll("pre.diff").forEach(function(p){var out=[];p.textContent.split("\n").forEach(function(l){
var s=document.createElement("span");s.textContent=l+"\n";if(l[0]==="-")s.className="del";else if(l[0]==="+")s.className="ins";out.push(s);});
p.textContent="";out.forEach(function(s){p.appendChild(s);});});
var f=document.getElementById("filter");if(f)f.addEventListener("input",function(){var q=f.value.toLowerCase();
document.querySelectorAll(".case").forEach(function(c){c.style.display=c.dataset.case.toLowerCase().indexOf(q)>=0?"":"none";});});
})();`

var pageTmpl = template.Must(template.New("matrix").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kbkit spec results matrix</title>
<style>{{.CSS}}</style></head><body>
<h1>kbkit spec results matrix</h1>
<p class="sub">{{len .Rows}} implementations × {{len .Suites}} suites of the kbkit spec (kbkit spec run), by kbkit {{.Kit}}, spec_version {{.SpecVersion}}. A cell is passed/cases; click it for the cases that did not pass.</p>
<table id="matrix">
<tr><th>implementation</th>{{range .Suites}}<th>{{.}}</th>{{end}}<th>total</th><th>tier</th></tr>
{{range .Rows}}<tr data-impl="{{.Name}}" data-tier="{{.Tier}}"><td><b>{{.Name}}</b><div class="k">{{.Source}}{{if .Expect}}<br>expectations: {{.Expect}}{{end}}{{if .RunBy}}<br>{{.RunBy}}{{end}}</div></td>
{{$a := .Anchor}}{{range .Cells}}<td class="{{.Class}}" data-suite="{{.Suite}}" data-pass="{{.Counts.Pass}}" data-total="{{.Counts.Total}}" data-fail="{{.Counts.Fail}}" data-error="{{.Counts.Error}}" data-expected-fail="{{.Counts.ExpectedFail}}" data-unexpected-pass="{{.Counts.UnexpectedPass}}" data-skip="{{.Counts.Skip}}">{{if .Has}}<a href="#{{$a}}-{{.Suite}}"><span class="n">{{.Counts.Pass}}/{{.Counts.Total}}</span>
<div class="k">{{if .Counts.Fail}}{{.Counts.Fail}} failed · {{end}}{{if .Counts.Error}}{{.Counts.Error}} errored · {{end}}{{if .Counts.UnexpectedPass}}{{.Counts.UnexpectedPass}} passed unexpectedly · {{end}}{{if .Counts.ExpectedFail}}{{.Counts.ExpectedFail}} expected to fail · {{end}}{{if .Counts.Skip}}{{.Counts.Skip}} skipped{{end}}</div></a>{{else}}-{{end}}</td>{{end}}
<td class="n">{{.Total.Pass}}/{{.Total.Total}}</td><td><span class="tier {{.Color}}">{{.Tier}}</span>{{if .Err}}<div class="k">{{.Err}}</div>{{end}}</td></tr>
{{end}}</table>

<h2>Tiers</h2>
<table id="tiers">{{range .Tiers}}<tr><td><span class="tier {{.Color}}">{{.Name}}</span></td><td>{{.Rule}}</td></tr>{{end}}</table>
<p class="sub">An implementation gets the first tier whose rule holds. Its badge: <code>kbkit spec matrix --badges DIR</code> writes DIR/NAME.json, a shields.io endpoint (<code>https://img.shields.io/endpoint?url=...</code>).</p>
{{if .Against}}
<h2>Changes since {{.Against}}</h2>
{{if .Changes}}<table id="changes" class="changes"><tr><th>change</th><th>implementation</th><th>case</th><th>was</th><th>now</th></tr>
{{range .Changes}}<tr data-kind="{{.Kind}}"><td{{if eq .Kind "new failure"}} class="c-new-failure"{{end}}>{{.Kind}}</td><td>{{.Impl}}</td><td>{{.ID}}</td><td>{{.Was}}</td><td>{{.Now}}</td></tr>
{{end}}</table>{{else}}<p id="changes">None.</p>{{end}}{{end}}

<h2>Cases that did not pass</h2>
<input id="filter" placeholder="filter by case id" size="40">
{{range .Rows}}<details id="{{.Anchor}}" data-impl="{{.Name}}"{{if .Total.Bad}} open{{end}}><summary>{{.Name}}: {{len .Failures}} cases ({{.Total.Fail}} failed, {{.Total.Error}} errored, {{.Total.UnexpectedPass}} passed unexpectedly, {{.Total.ExpectedFail}} expected to fail)</summary>
{{range .Groups}}<h4 id="{{.Anchor}}" class="suite">{{.Suite}}: {{if .Failures}}{{len .Failures}} not passed{{else}}none (every case passed or was skipped){{end}}</h4>
{{range .Failures}}<div class="case v-{{.Verdict}}" data-case="{{.ID}}" data-verdict="{{.Verdict}}" data-suite="{{.Suite}}"><h3>{{.ID}} <span class="k">{{.Verdict}} · {{.File}}:{{.Line}}</span></h3>
{{if .Message}}<div>{{.Message}}</div>{{end}}{{if .Reason}}<div class="k">expectations: {{.Reason}}</div>{{end}}
{{if .Diff}}<pre class="diff">{{.Diff}}</pre>{{end}}{{if .Input}}<div class="k">input</div><pre class="input">{{.Input}}</pre>{{end}}</div>
{{end}}{{end}}</details>
{{end}}
<script>{{.JS}}</script>
</body></html>
`))
