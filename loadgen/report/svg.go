package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"sort"
	"strings"
)

// series is one line of a chart.
type series struct {
	name  string
	color string
	pts   [][2]float64
	dash  bool
}

// chart is a line chart drawn as inline SVG: no script, nothing fetched.
type chart struct {
	title         string
	xLabel        string
	yFmt          func(float64) string
	xFmt          func(float64) string
	xTicks        []float64 // fixed x ticks (default: nice ticks)
	series        []series
	yMin0         bool
	width, height int
	// bands shade x ranges (partial seconds, the drain after the load).
	bands []band
	// note is drawn under the title (e.g. what the shading means).
	note string
}

// band is a shaded x range.
type band struct {
	x0, x1 float64
	class  string // "partial" or "drain"
}

const (
	padL, padR, padT, padB = 64, 16, 28, 40
)

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	first, last := math.Floor(lo/step), math.Ceil(hi/step-1e-9)
	for i := first; i <= last; i++ {
		out = append(out, i*step)
	}
	return out
}

func (c chart) svg() template.HTML {
	w, h := c.width, c.height
	if w == 0 {
		w = 900
	}
	if h == 0 {
		h = 260
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, p := range s.pts {
			xmin, xmax = math.Min(xmin, p[0]), math.Max(xmax, p[0])
			ymin, ymax = math.Min(ymin, p[1]), math.Max(ymax, p[1])
		}
	}
	// The legend stands right-aligned on the title's line, or on a line of
	// its own under the title when they would overlap.
	top, legendY := padT, 18
	if float64(w-padR)-c.legendWidth() < titleEnd(c.title) {
		top, legendY = padT+16, 34
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, w, h, w, h, html.EscapeString(c.title))
	fmt.Fprintf(&b, `<text x="%d" y="18" class="ct">%s</text>`, padL, html.EscapeString(c.title))
	if math.IsInf(xmin, 1) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">no data</text></svg>`, w/2-30, h/2)
		return template.HTML(b.String())
	}
	if c.yMin0 || ymin > 0 {
		ymin = 0
	}
	yt := niceTicks(ymin, ymax, 5)
	ymin, ymax = yt[0], yt[len(yt)-1]
	if ymax <= ymin {
		ymax = ymin + 1
	}
	xt := c.xTicks
	if xt == nil {
		xt = niceTicks(xmin, xmax, 8)
		xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	} else {
		xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	pw, ph := float64(w-padL-padR), float64(h-top-padB)
	X := func(x float64) float64 { return float64(padL) + (x-xmin)/(xmax-xmin)*pw }
	Y := func(y float64) float64 { return float64(top) + ph - (y-ymin)/(ymax-ymin)*ph }
	for _, t := range yt {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="grid"/>`, padL, w-padR, Y(t), Y(t))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" class="yt">%s</text>`, padL-6, Y(t)+4, html.EscapeString(c.yFmt(t)))
	}
	for i, t := range xt {
		if t < xmin || t > xmax {
			continue
		}
		anchor := ""
		if i == len(xt)-1 && X(t) > float64(w-padR)-20 {
			anchor = ` style="text-anchor:end"` // the last label stays inside
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" class="grid"/>`, X(t), X(t), top, h-padB)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="xt"%s>%s</text>`, X(t), h-padB+16, anchor, html.EscapeString(c.xFmt(t)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="xl">%s</text>`, padL+int(pw/2), h-6, html.EscapeString(c.xLabel))
	for _, bd := range c.bands {
		x0, x1 := math.Max(bd.x0, xmin), math.Min(bd.x1, xmax)
		if x1 <= x0 {
			continue
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%.1f" class="band %s"/>`, X(x0), top, X(x1)-X(x0), ph, bd.class)
	}
	if c.note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="note">%s</text>`, padL, top+10, html.EscapeString(c.note))
	}
	lx := float64(w - padR)
	for i := len(c.series) - 1; i >= 0; i-- {
		s := c.series[i]
		if len(s.pts) == 0 {
			continue
		}
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", X(p[0]), Y(p[1])))
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6"%s points="%s"><title>%s</title></polyline>`,
			s.color, dash, strings.Join(pts, " "), html.EscapeString(s.name))
		if len(s.pts) == 1 {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, X(s.pts[0][0]), Y(s.pts[0][1]), s.color)
		}
		name := html.EscapeString(s.name)
		lx -= legendEntry(s.name)
		if s.dash {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="4 2"/>`, lx, lx+12, legendY-6, legendY-6, s.color)
		} else {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="12" height="4" fill="%s"/>`, lx, legendY-8, s.color)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="lg">%s</text>`, lx+16, legendY, name)
	}
	c.hover(&b, X, float64(top), ph)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// legendEntry is the width a series' legend entry takes: its swatch, its
// name (11px text, at most 8px a character) and the gap after it.
func legendEntry(name string) float64 { return float64(8*len(name) + 26) }

// legendWidth is the width of the whole legend.
func (c chart) legendWidth() float64 {
	var lw float64
	for _, s := range c.series {
		if len(s.pts) > 0 {
			lw += legendEntry(s.name)
		}
	}
	return lw
}

// titleEnd is where the title (bold 12px, at most 8px a character) ends,
// with a gap after it.
func titleEnd(title string) float64 { return float64(padL + 8*len(title) + 12) }

// hover draws an invisible column around every x with a tooltip of every
// series' value there (the page's script shows it at once; the <title>
// is the fallback).
func (c chart) hover(b *strings.Builder, X func(float64) float64, top, ph float64) {
	vals := map[float64][]string{}
	var xs []float64
	for _, s := range c.series {
		for _, p := range s.pts {
			if _, ok := vals[p[0]]; !ok {
				xs = append(xs, p[0])
			}
			vals[p[0]] = append(vals[p[0]], s.name+": "+c.yFmt(p[1]))
		}
	}
	sort.Float64s(xs)
	for i, x := range xs {
		l, r := X(x)-4, X(x)+4
		if i > 0 {
			l = (X(xs[i-1]) + X(x)) / 2
		}
		if i < len(xs)-1 {
			r = (X(x) + X(xs[i+1])) / 2
		}
		tip := html.EscapeString(c.xFmt(x) + "\n" + strings.Join(vals[x], "\n"))
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="hov" data-tip="%s"><title>%s</title></rect>`,
			l, top, math.Max(r-l, 1), ph, tip, tip)
	}
}
