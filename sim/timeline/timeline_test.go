package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/subspace/kbkit/kbcore"
)

const (
	cmdA = "5e1db965-0000-4000-8000-000000000001"
	cmdB = "76598ff8-0000-4000-8000-000000000002"
	page = "27a904b9-0000-4000-8000-00000000000a"
)

// sample is a seed in which cmdA was acknowledged at seq 5 and logged at
// seqs 5 and 6 (a double echo), seen by windows 0 and 1.
func sample() *Timeline {
	t := &Timeline{Title: "seed 1 <FAILED>", Seed: 1}
	for i := 0; i < 2; i++ {
		t.AddLane(Lane{ID: fmt.Sprintf("w%d", i), Kind: LaneWindow, Label: "P0"})
	}
	t.AddLane(Lane{ID: "i0", Kind: LaneInstance, Label: "instance 0"})
	t.AddLane(Lane{ID: "log P0", Kind: LaneLog, Label: "page log"})
	t.Add(Event{Lane: "w0", Kind: KindOpen, At: 1, Window: 0, Page: page, Seq: 4, Label: "open at seq 4"})
	t.Add(Event{Lane: "w1", Kind: KindOpen, At: 1, Window: 1, Page: page, Seq: 4, Label: "open at seq 4"})
	issue := t.Add(Event{Lane: "w0", Kind: KindIssue, At: 10, Window: 0, Page: page, Cmd: cmdA, Label: "edit-text </script>"})
	cmd := t.Add(Event{Lane: "w0", Kind: KindCommand, At: 20, End: 40, Window: 0, Page: page, Cmd: cmdA, Seq: 5, Status: "seq 5", Links: []int{issue}})
	t.Add(Event{Lane: "i0", Kind: KindPost, At: 20, End: 40, Window: 0, Page: page, Cmd: cmdA, Seq: 5, Status: "seq 5", Links: []int{cmd}})
	t.Add(Event{Lane: "w0", Kind: KindEcho, At: 50, Window: 0, Page: page, Cmd: cmdA, Seq: 5, Links: []int{cmd}})
	t.Add(Event{Lane: "w1", Kind: KindEcho, At: 51, Window: 1, Page: page, Cmd: cmdA, Seq: 5, Links: []int{cmd}})
	t.Add(Event{Lane: "w1", Kind: KindEcho, At: 52, Window: 1, Page: page, Cmd: cmdA, Seq: 6, Links: []int{cmd}})
	t.Add(Event{Lane: "w1", Kind: KindIssue, At: 60, Window: 1, Page: page, Cmd: cmdB, Label: "delete"})
	t.Add(Event{Lane: "w1", Kind: KindCommand, At: 61, Open: true, Window: 1, Page: page, Cmd: cmdB})
	t.Add(Event{Lane: "log P0", Kind: KindLog, At: 40, Window: -1, Page: page, Cmd: cmdA, Seq: 5})
	t.Add(Event{Lane: "log P0", Kind: KindLog, At: 52, Window: -1, Page: page, Cmd: cmdA, Seq: 6})
	t.Add(Event{Lane: "w1", Kind: KindFault, At: 70, Window: 1, Page: page, Fault: true, Label: "echo 7 dropped (fault)"})
	return t
}

func kinds(t *Timeline, ids []int) []string {
	var out []string
	for _, id := range ids {
		e := t.Events[id]
		out = append(out, fmt.Sprintf("%s:%s:%d", e.Lane, e.Kind, e.Seq))
	}
	return out
}

func TestFindingsLinkToTheirEvents(t *testing.T) {
	tl := sample()
	for _, tc := range []struct {
		text string
		want []string
	}{
		// A full id: every event of the command.
		{"command " + cmdA + " appears 2 times in the logs",
			[]string{"w0:issue:0", "w0:command:5", "i0:post:5", "log P0:log:5", "w0:echo:5", "w1:echo:5", "w1:echo:6", "log P0:log:6"}},
		// A short id and a window: the command, but only that window's
		// echoes; the seqs named light up the log there.
		{"w1 echo of 5e1db965 (edit-text) at seq 6, but the server acknowledged it as seq 5",
			[]string{"w0:issue:0", "w0:command:5", "i0:post:5", "log P0:log:5", "w1:echo:5", "w1:echo:6", "log P0:log:6"}},
		// A window and a seq without a command: that window's events at
		// the seq, and the log's.
		{"window 1 (page 27a904b9, seq 6) renders a document that differs",
			[]string{"w1:echo:6", "log P0:log:6"}},
		// A window alone: its last event.
		{"window 1 still has 1 pending commands", []string{"w1:fault:0"}},
		// A page alone: its log.
		{"page 27a904b9: no linearization of 9 operations", []string{"log P0:log:5", "log P0:log:6"}},
		// Nothing known.
		{"... and 3 more", nil},
	} {
		id := tl.AddFinding("x", tc.text)
		got := kinds(tl, tl.Findings[id].Events)
		if !slices.Equal(sorted(got), sorted(tc.want)) {
			t.Errorf("%q links\n  %v\nwant\n  %v", tc.text, got, tc.want)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestSplitFindings(t *testing.T) {
	got := SplitFindings("window 0 differs:\n  fold: a\n  got:  b\nwindow 1 still has 1 pending commands\n")
	if len(got) != 2 || got[0] != "window 0 differs:\n  fold: a\n  got:  b" || got[1] != "window 1 still has 1 pending commands" {
		t.Errorf("%q", got)
	}
}

func TestDiff(t *testing.T) {
	a := []string{"page", "• a", "• b", "• c"}
	b := []string{"page", "• a", "• c", "• d"}
	var out []string
	for _, l := range Diff(a, b) {
		out = append(out, string(l.Op)+l.Text)
	}
	if want := []string{" page", " • a", "-• b", " • c", "+• d"}; !slices.Equal(out, want) {
		t.Errorf("diff %q, want %q", out, want)
	}
	if Differs(Diff(a, a)) || !Differs(Diff(a, b)) {
		t.Error("Differs")
	}
}

func TestOutline(t *testing.T) {
	d, _ := kbcore.NewDoc(kbcore.Page{ID: page, Title: "P0"}, nil)
	parent, child := "11111111-0000-4000-8000-000000000000", "22222222-0000-4000-8000-000000000000"
	d = kbcore.Apply(d, kbcore.Command{ID: parent, Type: kbcore.TypeCreateAfter, Payload: []byte(`{"text":"top"}`)}).Doc
	d = kbcore.Apply(d, kbcore.Command{ID: child, Type: kbcore.TypeCreateAfter, Payload: []byte(`{"text":"kid","parent":"` + parent + `"}`)}).Doc
	got := Outline(d)
	want := []string{`page "P0"`, "• top  ·11111111", "  • kid  ·22222222"}
	if !slices.Equal(got, want) {
		t.Errorf("outline %q, want %q", got, want)
	}
}

// TestHTMLIsSelfContained: the page fetches nothing, carries the events
// as JSON the script reads (escaped: a payload cannot close the script),
// and renders findings with their event ids and the documents' diff.
func TestHTMLIsSelfContained(t *testing.T) {
	tl := sample()
	tl.AddFinding("exactly-once", "command "+cmdA+" appears 2 times in the logs")
	tl.Docs = []PageDocs{{Page: page, Label: "page P0", Log: DocView{Label: "fold of the log", Lines: []string{"page", "• a"}},
		Windows: []DocView{{Label: "w1", Lines: []string{"page", "• b"}, Diff: Diff([]string{"page", "• a"}, []string{"page", "• b"})}}}}
	tl.Checks = []Check{{Name: "exactly-once", Detail: "command appears 2 times"}, {Name: "gapless", Passed: true}}
	var b bytes.Buffer
	if err := HTML(&b, tl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`).FindString(page); m != "" {
		t.Errorf("remote reference %q", m)
	}
	if regexp.MustCompile(`(?i)<script[^>]+src|<link[^>]+stylesheet|@import|url\(http`).MatchString(page) {
		t.Error("the page loads a script or stylesheet")
	}
	if strings.Count(page, "</script>") != 2 {
		t.Errorf("the data closes its script: %d </script>", strings.Count(page, "</script>"))
	}
	for _, want := range []string{`data-finding="0" data-events="2 3 4 10 5 6 7 11"`, `class="d-del">- • a</span>`, `class="d-add">`, ` • b</span>`,
		"seed 1 &lt;FAILED&gt;", `<td class="fail">FAILED</td>`, `id="tl-data"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(?s)<script id="tl-data" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data")
	}
	var data struct {
		Lanes  []Lane  `json:"lanes"`
		Events []Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("data: %v", err)
	}
	if len(data.Lanes) != 4 || len(data.Events) != len(tl.Events) || data.Events[2].Label != "edit-text </script>" {
		t.Errorf("data: %d lanes, %d events, %q", len(data.Lanes), len(data.Events), data.Events[2].Label)
	}
}
