package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// measureCharts is run in the page: for every chart it compares the box
// Chromium laid out for the title with those of the legend's entries
// (swatch and name) and writes on <body> how many charts it measured and
// which ones overlap.
const measureCharts = `(function(){
 var n=0,bad=[];
 document.querySelectorAll("svg.chart").forEach(function(s){
  var t=s.querySelector("text.ct");if(!t)return;n++;
  var a=t.getBBox(),hit=false;
  s.querySelectorAll("text.lg").forEach(function(l){
   var b=l.getBBox(),x0=b.x-16;
   if(x0<a.x+a.width&&b.x+b.width>a.x&&b.y<a.y+a.height&&b.y+b.height>a.y)hit=true;
  });
  if(hit)bad.push(s.getAttribute("aria-label"));
 });
 document.body.setAttribute("data-charts",String(n));
 document.body.setAttribute("data-overlaps",bad.join("|"));
 return n>0;
})()`

// checkChartLayout opens url in chrome and fails when a chart's title
// overlaps its legend, or when the page has no chart.
func checkChartLayout(chrome, url string) (string, error) {
	profile, err := os.MkdirTemp("", "browsercheck-profile.")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(profile)
	dom, err := domWhen(chrome, profile, url, measureCharts, 60*time.Second)
	if err != nil {
		return "", err
	}
	return chartLayoutOf(dom)
}

// chartLayoutOf reads what measureCharts wrote on <body>.
func chartLayoutOf(dom string) (string, error) {
	m := regexp.MustCompile(`<body[^>]* data-charts="(\d+)" data-overlaps="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		return "", fmt.Errorf("the charts were not measured")
	}
	n, _ := strconv.Atoi(m[1])
	if n == 0 {
		return "", fmt.Errorf("no chart with a title")
	}
	if m[2] != "" {
		return "", fmt.Errorf("title and legend overlap in: %s", strings.ReplaceAll(m[2], "|", ", "))
	}
	return fmt.Sprintf("chart layout: %d charts, no title overlaps its legend", n), nil
}
