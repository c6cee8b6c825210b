package report

import (
	"fmt"
	"html/template"
)

// Line is one series of a LineChart: (x, y) points.
type Line struct {
	Name, Color string
	Points      [][2]float64
}

// LineChart draws lines as the report's inline SVG charts (no script,
// nothing fetched); x is in seconds.
func LineChart(title, xLabel string, yFmt func(float64) string, lines []Line) template.HTML {
	c := chart{title: title, xLabel: xLabel, yFmt: yFmt, xFmt: func(v float64) string { return fmt.Sprintf("%g", v) }, yMin0: true}
	for _, l := range lines {
		c.series = append(c.series, series{name: l.Name, color: l.Color, pts: l.Points})
	}
	return c.svg()
}

// PageCSS is the style of the report's pages, for other pages drawing its
// charts.
func PageCSS() template.CSS { return template.CSS(pageCSS) }
