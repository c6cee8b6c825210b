// Command browsercheck checks what a headless Chromium rendered of kbkit's
// HTML pages (scripts/ci-browser.sh): the DOM it dumped (--dump-dom) and
// a screenshot (--screenshot).
//
//	browsercheck finding PAGE.html CHECKER [WORD]  # the id of CHECKER's first finding with events (saying WORD, if one does)
//	browsercheck timeline DOM.html ID        # lanes, events, finding ID lit in the rendered DOM
//	browsercheck timeline-first DOM.html     # the first screen: setup collapsed, a window's event first
//	browsercheck report DOM.html             # a loadgen report's charts and tables
//	browsercheck compare DOM.html            # a loadgen comparison's table and charts
//	browsercheck matrix DOM.html OPEN NAME=TIER...  # a spec results matrix opened at #OPEN
//	browsercheck k6report REPORT.html METRIC...     # a k6 web dashboard export holds these metrics
//	browsercheck k6summary DOM.html METRIC...       # its rendered Summary section shows them
//	browsercheck png FILE.png                # the screenshot is not blank
//	browsercheck dom-when CHROME URL READY OUT.html  # the DOM once the JavaScript READY is true (DevTools over a pipe)
//	browsercheck chart-layout CHROME URL     # no chart's title overlaps its legend, as Chromium lays them out
//	browsercheck wasm DOM.html               # the @kbkit/core example page (js/kbcore/example)
package main

import (
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"regexp"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: browsercheck finding|timeline|report|compare|png FILE [ARG]")
		os.Exit(2)
	}
	verb, file := os.Args[1], os.Args[2]
	if verb == "dom-when" {
		if len(os.Args) != 6 {
			fail(errors.New("usage: browsercheck dom-when CHROME URL READY OUT.html"))
		}
		profile, err := os.MkdirTemp("", "browsercheck-profile.")
		if err != nil {
			fail(err)
		}
		dom, err := domWhen(file, profile, os.Args[3], os.Args[4], 60*time.Second)
		os.RemoveAll(profile)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(os.Args[5], []byte(dom), 0o644); err != nil {
			fail(err)
		}
		return
	}
	if verb == "chart-layout" {
		if len(os.Args) != 4 {
			fail(errors.New("usage: browsercheck chart-layout CHROME URL"))
		}
		msg, err := checkChartLayout(file, os.Args[3])
		if err != nil {
			fail(fmt.Errorf("%s: %w", os.Args[3], err))
		}
		fmt.Println(msg)
		return
	}
	arg := ""
	if len(os.Args) > 3 {
		arg = os.Args[3]
	}
	if verb == "png" {
		f, err := os.Open(file)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			fail(fmt.Errorf("%s: %w", file, err))
		}
		msg, err := notBlank(img)
		if err != nil {
			fail(fmt.Errorf("%s: %w", file, err))
		}
		fmt.Printf("%s: %s\n", file, msg)
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		fail(err)
	}
	dom := string(b)
	var msg string
	switch verb {
	case "finding":
		msg, err = findingOf(dom, arg, os.Args[4:]...)
	case "timeline":
		msg, err = checkTimeline(dom, arg)
	case "timeline-first":
		msg, err = checkTimelineFirst(dom)
	case "report":
		msg, err = checkReport(dom)
	case "compare":
		msg, err = checkCompare(dom)
	case "wasm":
		msg, err = checkWasmPage(dom)
	case "matrix":
		msg, err = checkMatrix(dom, arg, os.Args[4:])
	case "k6report":
		msg, err = checkK6Report(dom, os.Args[3:])
	case "k6summary":
		msg, err = checkK6Summary(dom, os.Args[3:])
	default:
		err = fmt.Errorf("unknown check %q", verb)
	}
	if err != nil {
		fail(fmt.Errorf("%s: %w", file, err))
	}
	fmt.Println(msg)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "browsercheck:", err)
	os.Exit(1)
}

var findingRe = regexp.MustCompile(`<a class="finding[^"]*" id="finding-(\d+)" href="#f\d+" data-finding="\d+" data-events="([^"]*)"><span class="n">[^<]*</span><b>([^<]*)</b>: ([^<]*)`)

// findingOf returns the id of checker's first finding that links events,
// preferring one whose text has word.
func findingOf(page, checker string, word ...string) (string, error) {
	first := ""
	for _, m := range findingRe.FindAllStringSubmatch(page, -1) {
		if m[3] != checker || strings.TrimSpace(m[2]) == "" {
			continue
		}
		if len(word) == 0 || strings.Contains(m[4], word[0]) {
			return m[1], nil
		}
		if first == "" {
			first = m[1]
		}
	}
	if first != "" {
		return first, nil
	}
	return "", fmt.Errorf("no %s finding that links events", checker)
}

func count(dom, pattern string) int {
	return len(regexp.MustCompile(pattern).FindAllStringIndex(dom, -1))
}

// checkTimeline checks a timeline's DOM after its script ran with #fID:
// lanes of every kind drawn, rows of events rendered, the finding active,
// its events selected, and at least one of them rendered lit.
func checkTimeline(dom, id string) (string, error) {
	lanes := map[string]int{}
	for _, k := range []string{"window", "instance", "log"} {
		lanes[k] = count(dom, `<div class="lane `+k+`" data-lane=`)
		if lanes[k] == 0 {
			return "", fmt.Errorf("no %s lane rendered", k)
		}
	}
	evs := count(dom, `<div class="ev k-[a-z]+[^"]*" data-id="\d+"`)
	if evs < 10 {
		return "", fmt.Errorf("%d events rendered", evs)
	}
	var events string
	for _, m := range findingRe.FindAllStringSubmatch(strings.ReplaceAll(dom, `class="finding active"`, `class="finding"`), -1) {
		if m[1] == id {
			events = m[2]
		}
	}
	if events == "" {
		return "", fmt.Errorf("finding %s links no event", id)
	}
	if !strings.Contains(dom, `<a class="finding active" id="finding-`+id+`"`) {
		return "", fmt.Errorf("finding %s is not the active one", id)
	}
	sel := regexp.MustCompile(`<div id="tl"[^>]* data-selected="([^"]*)"`).FindStringSubmatch(dom)
	if sel == nil || sel[1] != events {
		return "", fmt.Errorf("the timeline selected %v, finding %s links %q", sel, id, events)
	}
	lit := 0
	for _, e := range strings.Fields(events) {
		lit += count(dom, `class="(ev|span) k-[a-z]+[^"]* hl[^"]*" data-id="`+e+`"`)
	}
	if lit == 0 {
		return "", fmt.Errorf("none of finding %s's events (%s) is rendered lit", id, events)
	}
	return fmt.Sprintf("timeline: lanes %v, %d events rendered, finding %s links events %s, %d rendered lit", lanes, evs, id, events, lit), nil
}

// checkTimelineFirst checks a timeline's first screen (opened without a
// #f or #e): the setup is one collapsed row at the top and the first
// event row is on a window's lane, not a row of setup at 0.0 ms.
func checkTimelineFirst(dom string) (string, error) {
	windows := map[string]bool{}
	for _, m := range regexp.MustCompile(`<div class="lane window" data-lane="([^"]+)"`).FindAllStringSubmatch(dom, -1) {
		windows[m[1]] = true
	}
	if len(windows) == 0 {
		return "", errors.New("no window lane rendered")
	}
	rows := regexp.MustCompile(`<div class="ev ([^"]*)" (?:data-setup="(\d+)"|data-id="\d+" data-lane="([^"]+)")`).FindAllStringSubmatch(dom, -1)
	if len(rows) < 2 {
		return "", fmt.Errorf("%d rows rendered", len(rows))
	}
	if !strings.HasPrefix(rows[0][1], "setup") || strings.Contains(rows[0][1], "shown") || rows[0][2] == "" {
		return "", fmt.Errorf("the first row is not the collapsed setup: class %q", rows[0][1])
	}
	if !windows[rows[1][3]] {
		return "", fmt.Errorf("the first event row is on lane %q, not a window's (class %q)", rows[1][3], rows[1][1])
	}
	return fmt.Sprintf("timeline first screen: %s setup events collapsed, then %s on %s", rows[0][2], strings.Fields(rows[1][1])[0], rows[1][3]), nil
}

// checkReport checks a loadgen report: every chart drawn with lines and
// hover values, the per-type table, the tooltip element.
func checkReport(dom string) (string, error) {
	charts := count(dom, `<svg class="chart"`)
	lines := count(dom, `<polyline `)
	hover := count(dom, `class="hov" data-tip=`)
	for _, want := range []string{"errors and recovery per second", "throughput per second", "By operation type", `id="tip"`} {
		if !strings.Contains(dom, want) {
			return "", fmt.Errorf("no %q", want)
		}
	}
	if charts < 6 || lines < 10 || hover < 20 {
		return "", fmt.Errorf("%d charts, %d lines, %d hover targets", charts, lines, hover)
	}
	return fmt.Sprintf("report: %d charts, %d lines, %d hover targets", charts, lines, hover), nil
}

// checkCompare checks a comparison: the table (figures with a better run
// marked, or all equal for a run against itself), charts with both runs.
func checkCompare(dom string) (string, error) {
	rows := count(dom, `<tr data-better="[^"]*"><td>`)
	marked := count(dom, `<tr data-better="[AB]"><td>`)
	equal := count(dom, `<tr data-better="="><td>`)
	a, b := count(dom, `class="lg">A `), count(dom, `class="lg">B `)
	if rows < 20 || a < 4 || b < 4 {
		return "", fmt.Errorf("%d figures, %d legends of A, %d of B", rows, a, b)
	}
	if marked+equal == 0 {
		return "", errors.New("no figure is marked better or equal")
	}
	return fmt.Sprintf("compare: %d figures (%d with a better run, %d equal), charts with A (%d) and B (%d)", rows, marked, equal, a, b), nil
}

// notBlank fails a screenshot of one colour or nearly so: it wants a
// spread of luminance and some distinct colours.
func notBlank(img image.Image) (string, error) {
	r := img.Bounds()
	if r.Dx() < 100 || r.Dy() < 100 {
		return "", fmt.Errorf("%dx%d: too small", r.Dx(), r.Dy())
	}
	var n, sum, sq float64
	colors := map[uint32]bool{}
	for y := r.Min.Y; y < r.Max.Y; y += 2 {
		for x := r.Min.X; x < r.Max.X; x += 2 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			l := (0.299*float64(cr) + 0.587*float64(cg) + 0.114*float64(cb)) / 65535
			n++
			sum += l
			sq += l * l
			if len(colors) < 5000 {
				colors[(cr>>11)<<10|(cg>>11)<<5|cb>>11] = true
			}
		}
	}
	mean := sum / n
	sd := math.Sqrt(math.Max(0, sq/n-mean*mean))
	if sd < 0.03 || len(colors) < 16 {
		return "", fmt.Errorf("blank: luminance sd %.4f, %d colours", sd, len(colors))
	}
	return fmt.Sprintf("%dx%d, luminance sd %.3f, %d colours", r.Dx(), r.Dy(), sd, len(colors)), nil
}
