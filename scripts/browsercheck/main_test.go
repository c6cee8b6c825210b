package main

import (
	"image"
	"image/color"
	"strings"
	"testing"
)

func TestNotBlank(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 400, 300))
	for y := 0; y < 300; y++ {
		for x := 0; x < 400; x++ {
			img.Set(x, y, color.White)
		}
	}
	if _, err := notBlank(img); err == nil {
		t.Error("a white screenshot passed")
	}
	for y := 0; y < 300; y++ {
		for x := 0; x < 400; x++ {
			if (x/20+y/15)%3 == 0 {
				img.Set(x, y, color.RGBA{uint8(x), uint8(y), 120, 255})
			}
		}
	}
	if msg, err := notBlank(img); err != nil {
		t.Errorf("a drawn screenshot failed: %v", err)
	} else {
		t.Log(msg)
	}
}

const dom = `<a class="finding active" id="finding-2" href="#f2" data-finding="2" data-events="5 9"><span class="n">2 events</span><b>exactly-once</b>: x</a>
<div class="lane window" data-lane="w0"></div><div class="lane instance" data-lane="i0"></div><div class="lane log" data-lane="log P0"></div>
<div id="tl" data-rendered="12" data-selected="5 9">` +
	`<div class="ev k-echo" data-id="1"></div><div class="ev k-echo" data-id="2"></div><div class="ev k-echo" data-id="3"></div>` +
	`<div class="ev k-echo" data-id="4"></div><div class="ev k-post hl bad" data-id="5"></div><div class="ev k-echo" data-id="6"></div>` +
	`<div class="ev k-echo" data-id="7"></div><div class="ev k-echo" data-id="8"></div><div class="ev k-log" data-id="10"></div>` +
	`<div class="ev k-echo" data-id="11"></div>`

func TestCheckTimeline(t *testing.T) {
	if id, err := findingOf(dom, "exactly-once", "acknowledged"); err != nil || id != "2" {
		t.Errorf("finding %q %v", id, err)
	}
	if _, err := checkTimeline(dom, "2"); err != nil {
		t.Errorf("a lit finding failed: %v", err)
	}
	for name, bad := range map[string]string{
		"not lit":      strings.Replace(dom, " hl bad", " bad", 1),
		"not selected": strings.Replace(dom, `data-selected="5 9"`, `data-selected=""`, 1),
		"no log lane":  strings.Replace(dom, `class="lane log"`, `class="lane"`, 1),
		"not active":   strings.Replace(dom, "finding active", "finding", 1),
	} {
		if _, err := checkTimeline(bad, "2"); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestTimelineFirst(t *testing.T) {
	lanes := `<div class="lane window" data-lane="w0"></div><div class="lane log" data-lane="log P0"></div>`
	good := lanes + `<div class="t">setup</div><div class="ev setup" data-setup="12" style="">&#9656; 12 setup events</div>` +
		`<div class="ev k-open" data-id="0" data-lane="w0" style=""></div><div class="ev k-log" data-id="9" data-lane="log P0" style=""></div>`
	if msg, err := checkTimelineFirst(good); err != nil {
		t.Errorf("a collapsed setup then a window's event: %v", err)
	} else {
		t.Log(msg)
	}
	for name, dom := range map[string]string{
		"no setup row":      lanes + `<div class="ev k-log" data-id="9" data-lane="log P0" style=""></div><div class="ev k-open" data-id="0" data-lane="w0" style=""></div>`,
		"setup shown":       strings.Replace(good, `class="ev setup"`, `class="ev setup shown"`, 1),
		"a log entry first": lanes + `<div class="ev setup" data-setup="3" style=""></div><div class="ev k-log" data-id="9" data-lane="log P0" style=""></div>`,
	} {
		if _, err := checkTimelineFirst(dom); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestChartLayoutOf(t *testing.T) {
	if _, err := chartLayoutOf(`<body data-charts="6" data-overlaps="">`); err != nil {
		t.Errorf("no overlap: %v", err)
	}
	for _, dom := range []string{`<body data-charts="6" data-overlaps="errors and recovery per second">`, `<body data-charts="0" data-overlaps="">`, `<body>`} {
		if _, err := chartLayoutOf(dom); err == nil {
			t.Errorf("%s passed", dom)
		}
	}
}

func TestK6Summary(t *testing.T) {
	dom := `<h2 class="x">Summary</h2><table><tr><td align="left">kbkit_commit</td><td>8ms</td><td>49ms</td></tr>` +
		`<tr><td>kbkit_errors</td><td>0</td><td>0/s</td></tr></table>`
	if _, err := checkK6Summary(dom, []string{"kbkit_commit", "kbkit_errors"}); err != nil {
		t.Error(err)
	}
	if _, err := checkK6Summary(dom, []string{"kbkit_echo"}); err == nil {
		t.Error("a missing metric passed")
	}
	if _, err := checkK6Summary(strings.Replace(dom, "Summary", "Overview", 1), []string{"kbkit_commit"}); err == nil {
		t.Error("a page without its Summary section passed")
	}
}
